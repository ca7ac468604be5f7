//! The README's Node example: the ```` ```js ```` block right after the line
//! `<!-- npm-example -->`, which the smoke test runs as written.

/// The line that marks the example, alone on its line.
pub(crate) const MARKER: &str = "<!-- npm-example -->";

/// The info strings accepted on the example's opening fence.
const LANGUAGES: &[&str] = &["js", "javascript", "mjs"];

/// The code of the fenced block that follows [`MARKER`] (blank lines
/// between them allowed); `None` when the README has no marker; an error
/// message when the marker is not followed by a closed `js` block.
pub(crate) fn extract(readme: &str) -> Result<Option<String>, String> {
    let mut lines = readme.lines();
    if !lines.by_ref().any(|line| line.trim() == MARKER) {
        return Ok(None);
    }
    let Some(opening) = lines.by_ref().find(|line| !line.trim().is_empty()) else {
        return Err(format!("nothing follows `{MARKER}`"));
    };
    let fence = opening.trim();
    let ticks = fence.chars().take_while(|&c| c == '`').count();
    let language = fence[ticks..].split_whitespace().next().unwrap_or_default();
    if ticks < 3 || !LANGUAGES.contains(&language) {
        return Err(format!(
            "`{MARKER}` must be followed by a ```js block, found `{opening}`"
        ));
    }
    let closing = &fence[..ticks];
    let mut code = String::new();
    for line in lines {
        if line.trim() == closing {
            return Ok(Some(code));
        }
        code.push_str(line);
        code.push('\n');
    }
    Err(format!("the ```js block after `{MARKER}` is never closed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block right after the marker is returned, without its fences.
    #[test]
    fn extracts_the_block_after_the_marker() {
        let readme = "# x\n\n```js\nnot this\n```\n\n<!-- npm-example -->\n\n```js\nimport { a } from 'loomfence';\nconsole.log(a);\n```\n\n```js\nnor this\n```\n";
        assert_eq!(
            extract(readme),
            Ok(Some(
                "import { a } from 'loomfence';\nconsole.log(a);\n".to_owned()
            ))
        );
    }

    /// No marker: nothing to run, and not an error.
    #[test]
    fn no_marker_is_none() {
        assert_eq!(extract("# x\n```js\ncode\n```\n"), Ok(None));
        // The marker must be alone on its line, not quoted in prose.
        assert_eq!(extract("see `<!-- npm-example -->` below\n"), Ok(None));
    }

    /// A marker with no block, another language, or an open block is an
    /// error.
    #[test]
    fn broken_example_is_an_error() {
        let cases = [
            "<!-- npm-example -->\n",
            "<!-- npm-example -->\nSome prose.\n```js\nx\n```\n",
            "<!-- npm-example -->\n```rust\nx\n```\n",
            "<!-- npm-example -->\n```js\nx\n",
        ];
        for readme in cases {
            assert!(extract(readme).is_err(), "{readme:?}");
        }
    }

    /// A longer fence closes only on the same number of backticks.
    #[test]
    fn longer_fences_are_matched() {
        let readme = "<!-- npm-example -->\n````javascript\n```\nstill code\n````\n";
        assert_eq!(extract(readme), Ok(Some("```\nstill code\n".to_owned())));
    }
}
