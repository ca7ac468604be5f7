//! JSON text across the boundary, read and written here by hand.
//!
//! Events, envelopes and JSON values cross as text, one crossing per call
//! (see `json.rs` and `out.rs`). serde_json's own reader and writer would do
//! it, but cost the `.wasm` about 52 KB (generic visitors per type, float
//! parsing and printing tables, and core's float formatting pulled in by
//! serde's error messages), more than the package's whole remaining budget.
//! This codec needs far less because it leaves floats to JavaScript: a
//! number that is not a safe integer is read with `Number()` and written
//! with `String()`, exactly as `JSON.parse` and `JSON.stringify` would, and
//! everything else is integers, strings and structure.
//!
//! The reader takes what `JSON.stringify` writes (no whitespace) and is
//! strict about the rest: anything else is a [`TextError`], never a guess.
//! A lone surrogate, which `JSON.stringify` writes as a `\uD8xx` escape and
//! a Rust `String` cannot hold, is refused rather than replaced.

use loomfence_core::{Envelope, InputError, JsonObject, NewEvent};
use serde_json::{Map, Number, Value};

/// The largest integer a JS number holds exactly.
const SAFE: u64 = 9_007_199_254_740_991;

/// Deeper than any value `js/json.js` lets through (128 levels below the
/// value, inside an event or an envelope).
const MAX_DEPTH: usize = 160;

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/json.js")]
extern "C" {
    #[wasm_bindgen(js_name = numberOf)]
    fn number_of(text: &str) -> f64;
    #[wasm_bindgen(js_name = textOf)]
    fn text_of(number: f64) -> String;
}

/// Text that is not the JSON this codec reads, or a value in it the core
/// refuses (an execution id).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TextError(String);

impl From<InputError> for TextError {
    fn from(error: InputError) -> Self {
        Self(error.to_string())
    }
}

/// A reader over lines of JSON text, each a value or a fixed layout of
/// values (an event as `js/events.js` writes it).
pub(crate) struct Reader<'a> {
    /// The text.
    text: &'a str,
    /// The text's bytes.
    bytes: &'a [u8],
    /// The next byte to read.
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    /// Whether the whole text has been read.
    pub(crate) fn at_end(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// Reads one line with `read`: what it reads, then the line's end (a
    /// `\n`, or the end of the text).
    pub(crate) fn line<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<T, TextError>,
    ) -> Result<T, TextError> {
        let value = read(self)?;
        match self.peek() {
            None => Ok(value),
            Some(b'\n') => {
                self.at += 1;
                Ok(value)
            }
            Some(_) => Err(self.error("text after the value")),
        }
    }

    /// Any JSON value.
    pub(crate) fn any(&mut self) -> Result<Value, TextError> {
        self.value(0)
    }

    /// Consumes `text` exactly (a fixed part of a line a `js/` checker
    /// wrote, such as `{"kind":`), or fails.
    pub(crate) fn literal(&mut self, text: &str) -> Result<(), TextError> {
        if self.eat(text) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{text}`")))
        }
    }

    /// Consumes `text` if it comes next; whether it did.
    pub(crate) fn eat(&mut self, text: &str) -> bool {
        let next = self.bytes[self.at..].starts_with(text.as_bytes());
        if next {
            self.at += text.len();
        }
        next
    }

    /// A JSON object.
    pub(crate) fn read_object(&mut self) -> Result<JsonObject, TextError> {
        self.object(0)
    }

    /// A JSON string.
    pub(crate) fn read_string(&mut self) -> Result<String, TextError> {
        self.string()
    }

    /// A safe integer, as JavaScript writes one.
    pub(crate) fn read_integer(&mut self) -> Result<i64, TextError> {
        match self.number()? {
            Value::Number(n) => n.as_i64().ok_or_else(|| self.error("an integer")),
            _ => Err(self.error("an integer")),
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn error(&self, what: &str) -> TextError {
        TextError(format!("not JSON: {what} at byte {}", self.at))
    }

    /// Consumes `byte`, or fails.
    #[inline]
    fn expect(&mut self, byte: u8) -> Result<(), TextError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", char::from(byte))))
        }
    }

    /// Consumes `word` (`true`, `false`, `null`), or fails.
    fn word(&mut self, word: &str, value: Value) -> Result<Value, TextError> {
        self.literal(word).map(|()| value)
    }

    fn value(&mut self, depth: usize) -> Result<Value, TextError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deep"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth).map(Value::Object),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("expected a value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<JsonObject, TextError> {
        self.expect(b'{')?;
        let mut map = Map::new();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(map);
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            map.insert(key, self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(map);
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, TextError> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    /// A number: a safe integer is read here; anything else (a fraction,
    /// an exponent, an integer past 2^53) by JavaScript's `Number()`, so it
    /// is the very float `JSON.parse` gives.
    fn number(&mut self) -> Result<Value, TextError> {
        if let Some(value) = self.plain_integer() {
            return Ok(value);
        }
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        let token =
            std::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| self.error("a number"))?;
        let digits = token.strip_prefix('-').unwrap_or(token);
        if let Ok(whole) = digits.parse::<u64>()
            && whole <= SAFE
            && (digits == "0" || !digits.starts_with('0'))
        {
            return Ok(if token.starts_with('-') && whole != 0 {
                Value::from(-i64::try_from(whole).map_err(|_| self.error("a number"))?)
            } else {
                Value::from(whole)
            });
        }
        Number::from_f64(number_of(token))
            .map(Value::Number)
            .ok_or_else(|| self.error("a number that is not finite"))
    }

    /// A safe integer as `JSON.stringify` writes one (`0`, or an optional
    /// `-` and up to 16 digits, the first not `0`) with no other number
    /// character after it, read without a copy: what [`Reader::number`]
    /// would answer for it. `None` (nothing consumed) for anything else,
    /// which [`Reader::number`] reads its own way.
    fn plain_integer(&mut self) -> Option<Value> {
        let rest = &self.bytes[self.at..];
        let negative = rest.first() == Some(&b'-');
        let digits = &rest[usize::from(negative)..];
        let count = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        let leading_zero = count > 1 && digits[0] == b'0';
        let more = matches!(digits.get(count), Some(b'-' | b'+' | b'.' | b'e' | b'E'));
        if count == 0 || count > 16 || leading_zero || more {
            return None;
        }
        let whole = digits[..count]
            .iter()
            .fold(0_u64, |n, d| n * 10 + u64::from(d - b'0'));
        if whole > SAFE {
            return None;
        }
        self.at += usize::from(negative) + count;
        // Below 2^53, so the conversion is exact.
        let signed = i64::try_from(whole).ok()?;
        Some(if negative && whole != 0 {
            Value::from(-signed)
        } else {
            Value::from(whole)
        })
    }

    fn string(&mut self) -> Result<String, TextError> {
        self.expect(b'"')?;
        let mut text = String::new();
        loop {
            let start = self.at;
            let run = self.bytes[start..]
                .iter()
                .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)
                .unwrap_or(self.bytes.len() - start);
            self.at = start + run;
            // Between two ASCII bytes (or the text's ends) of a `str`: whole
            // characters, so the slice needs no UTF-8 check.
            text.push_str(
                self.text
                    .get(start..self.at)
                    .ok_or_else(|| self.error("a string that is not UTF-8"))?,
            );
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(text);
                }
                Some(b'\\') => {
                    self.at += 1;
                    text.push(self.escape()?);
                }
                _ => return Err(self.error("an unterminated string")),
            }
        }
    }

    /// The character of an escape, after its backslash.
    fn escape(&mut self) -> Result<char, TextError> {
        let Some(byte) = self.peek() else {
            return Err(self.error("an unterminated escape"));
        };
        self.at += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&unit) {
                    let low = if self.bytes[self.at..].starts_with(b"\\u") {
                        self.at += 2;
                        self.hex4()?
                    } else {
                        0
                    };
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error("a lone surrogate"));
                    }
                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    unit
                };
                char::from_u32(code).ok_or_else(|| self.error("a lone surrogate"))?
            }
            _ => return Err(self.error("an unknown escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, TextError> {
        let digits = self
            .bytes
            .get(self.at..self.at + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("a bad \\u escape"))?;
        self.at += 4;
        Ok(digits)
    }
}

/// Writes `value` as JSON text.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map),
    }
}

/// Writes a JSON object.
pub(crate) fn write_object(out: &mut String, map: &JsonObject) {
    out.push('{');
    for (index, (key, member)) in map.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, member);
    }
    out.push('}');
}

/// An integer as Rust writes it; a float as JavaScript does.
fn write_number(out: &mut String, number: &Number) {
    if let Some(whole) = number.as_u64() {
        write_u64(out, whole);
    } else if let Some(whole) = number.as_i64() {
        write_i64(out, whole);
    } else {
        out.push_str(&text_of(number.as_f64().unwrap_or(f64::NAN)));
    }
}

/// An integer in decimal, as `write!` would write it, without the
/// formatting machinery.
pub(crate) fn write_u64(out: &mut String, mut whole: u64) {
    let mut digits = [0_u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // A digit: the remainder is below 10.
        digits[at] = b'0' + u8::try_from(whole % 10).unwrap_or(0);
        whole /= 10;
        if whole == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// A signed integer in decimal, as `write!` would write it.
pub(crate) fn write_i64(out: &mut String, whole: i64) {
    if whole < 0 {
        out.push('-');
    }
    write_u64(out, whole.unsigned_abs());
}

/// A JSON string: quotes, backslashes and control characters escaped.
/// The runs between them are copied whole.
pub(crate) fn write_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut start = 0;
    for (at, &byte) in text.as_bytes().iter().enumerate() {
        let escaped = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // `at` is an ASCII byte's: both ends are character boundaries.
        out.push_str(text.get(start..at).unwrap_or_default());
        if escaped.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escaped);
        }
        start = at + 1;
    }
    out.push_str(text.get(start..).unwrap_or_default());
    out.push('"');
}

/// Writes a stored event.
pub(crate) fn write_envelope(out: &mut String, event: &Envelope) {
    write_head(
        out,
        event.execution_id.as_str(),
        event.sequence,
        &event.kind,
    );
    write_rest(out, &event.payload, &event.metadata, event.at);
}

/// Writes `event`, stored in `id`'s log at `sequence`, as its envelope.
pub(crate) fn write_stored(out: &mut String, id: &str, sequence: u64, event: &NewEvent) {
    write_head(out, id, sequence, &event.kind);
    write_rest(out, &event.payload, &event.metadata, event.at);
}

/// Writes a stored event as six lines for `js/events.js`'s `envelopeAt`
/// (`out::envelopes_from_lines` and `out::resume_answer_from_lines`): its
/// id and kind as JSON strings, its sequence, its payload and metadata as
/// JSON objects, its time. JSON as this module writes it has no line break
/// outside a string escape, so each part is one line.
pub(crate) fn write_envelope_lines(
    out: &mut String,
    id: &str,
    sequence: u64,
    event: (&str, &JsonObject, &JsonObject, i64),
) {
    let (kind, payload, metadata, at) = event;
    write_string(out, id);
    out.push('\n');
    write_u64(out, sequence);
    out.push('\n');
    write_string(out, kind);
    out.push('\n');
    write_object(out, payload);
    out.push('\n');
    write_object(out, metadata);
    out.push('\n');
    write_i64(out, at);
}

/// `{"executionId":…,"sequence":…,"kind":…`.
fn write_head(out: &mut String, id: &str, sequence: u64, kind: &str) {
    out.push_str("{\"executionId\":");
    write_string(out, id);
    out.push_str(",\"sequence\":");
    write_u64(out, sequence);
    out.push_str(",\"kind\":");
    write_string(out, kind);
}

/// Writes an event to be stored.
pub(crate) fn write_new_event(out: &mut String, event: &NewEvent) {
    out.push_str("{\"kind\":");
    write_string(out, &event.kind);
    write_rest(out, &event.payload, &event.metadata, event.at);
}

/// `,"payload":…,"metadata":…,"at":…}`.
fn write_rest(out: &mut String, payload: &JsonObject, metadata: &JsonObject, at: i64) {
    out.push_str(",\"payload\":");
    write_object(out, payload);
    out.push_str(",\"metadata\":");
    write_object(out, metadata);
    out.push_str(",\"at\":");
    write_i64(out, at);
    out.push('}');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Reads every line of `text` as a value.
    fn read(text: &str) -> Result<Vec<Value>, TextError> {
        let mut reader = Reader::new(text);
        let mut values = Vec::new();
        while !reader.at_end() {
            values.push(reader.line(Reader::any)?);
        }
        Ok(values)
    }

    #[test]
    fn reads_what_json_stringify_writes_and_writes_it_back() {
        let text = r#"{"a":[1,-2,0,9007199254740991,-9007199254740991,true,false,null,{},[]],"s":"q\"b\\s\/\b\f\n\r\t\u0001é😀","":{"":""}}"#;
        let [value] = read(text).unwrap().try_into().unwrap();
        assert_eq!(
            value,
            json!({"a": [1, -2, 0, 9_007_199_254_740_991_u64, -9_007_199_254_740_991_i64, true, false, null, {}, []],
                   "s": "q\"b\\s/\u{8}\u{c}\n\r\t\u{1}é😀", "": {"": ""}})
        );
        let mut written = String::new();
        write_value(&mut written, &value);
        assert_eq!(read(&written).unwrap(), vec![value]);
    }

    #[test]
    fn surrogate_pairs_are_characters_and_lone_surrogates_are_refused() {
        assert_eq!(read(r#""\ud83d\ude00""#).unwrap(), vec![json!("😀")]);
        for lone in [
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800x""#,
            r#""\ud800\u0041""#,
        ] {
            let error = read(lone).unwrap_err();
            assert!(
                error.to_string().contains("lone surrogate"),
                "{lone}: {error}"
            );
        }
    }

    #[test]
    fn lines_are_separate_values_and_anything_else_is_an_error() {
        assert_eq!(
            read("1\n\"a\"\n{}").unwrap(),
            vec![json!(1), json!("a"), json!({})]
        );
        for bad in [
            "{",
            "[1,]",
            "{\"a\"1}",
            "tru",
            "\"a",
            "1 2",
            "{} x",
            "\"\\x\"",
            "\"\\u12\"",
        ] {
            assert!(read(bad).is_err(), "{bad} must not read");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(read(&deep(MAX_DEPTH + 1)).is_ok());
        assert!(read(&deep(MAX_DEPTH + 2)).is_err());
    }

    #[test]
    fn integers_read_and_write_as_the_formatter_and_number_do() {
        for n in [
            0_i64,
            1,
            -1,
            9,
            10,
            -10,
            4_294_967_296,
            9_007_199_254_740_991,
            -9_007_199_254_740_991,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = String::new();
            write_i64(&mut out, n);
            assert_eq!(out, n.to_string());
        }
        let mut out = String::new();
        write_u64(&mut out, u64::MAX);
        assert_eq!(out, u64::MAX.to_string());
        for (text, value) in [
            ("0", json!(0)),
            ("-0", json!(0)),
            ("7", json!(7)),
            ("-7", json!(-7)),
            ("1234567890123456", json!(1_234_567_890_123_456_u64)),
            ("9007199254740991", json!(9_007_199_254_740_991_u64)),
            ("[1,-2]", json!([1, -2])),
        ] {
            assert_eq!(read(text).unwrap(), vec![value], "{text}");
        }
        // Left to `Reader::number` (JavaScript's `Number()` past this fast path).
        for other in [
            "01",
            "-",
            "-01",
            "1-2",
            "--1",
            "-+1",
            "1.5",
            "1e3",
            "9007199254740992",
            "12345678901234567",
        ] {
            let mut reader = Reader::new(other);
            assert_eq!(reader.plain_integer(), None, "{other}");
            assert_eq!(reader.at, 0, "{other}");
        }
    }

    #[test]
    fn strings_escape_what_json_must() {
        let mut out = String::new();
        write_string(&mut out, "a\"b\\c\n\u{1}\u{1f}é\u{2028}");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001\\u001fé\u{2028}\"");
    }
}
