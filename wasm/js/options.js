// A resume's options read in one call from WebAssembly, instead of one
// property read (and one key decoded) per field: `[fenceIfParkedAt,
// answerText, at]`, the answer as JSON text ('null' when omitted) or the
// InputError that says why it is not JSON. A getter, a Proxy trap or a
// revoked Proxy that throws while the options are read answers an
// InputError INVALID_OPTIONS (what it threw is its `cause`): never the
// thrown value itself, so it can never be read as the fields. The Rust side checks the fields in order, so
// the first bad one is the one reported.

import { unreadable } from './errors.js';
import { jsonText } from './json.js';

export function resumeOptions(options) {
  try {
    const { fenceIfParkedAt, answer, at } = options;
    return [fenceIfParkedAt, answer === undefined ? 'null' : jsonText(answer, 'answer', 'INVALID_ANSWER'), at];
  } catch (thrown) {
    return unreadable('options', 'INVALID_OPTIONS', thrown);
  }
}
