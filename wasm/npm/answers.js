// Reading what a caller's callback answered, before it goes anywhere: the
// answer is awaited through its `then`, read once. An answer whose `then`
// cannot be read (a revoked Proxy, a trap or a getter that throws) is the
// caller's `unreadable(thrown)` refusal, never what it threw: `await answer`
// would have rejected with that thrown value itself.

/** What `answer` settles to; a rejection of a real thenable is the callback's own failure, rethrown as it came. */
export async function settled(answer, unreadable) {
  if (answer === null || (typeof answer !== 'object' && typeof answer !== 'function')) return answer;
  let then;
  try {
    then = answer.then;
  } catch (thrown) {
    throw unreadable(thrown);
  }
  if (typeof then !== 'function') return answer;
  return new Promise((resolve, reject) => then.call(answer, resolve, reject));
}
