//! The size of the package's `.wasm`: measured raw and gzipped, before and
//! after `wasm-opt`, and judged against [`BUDGET`].
//!
//! Gzipped at the best compression level, as a CDN or `npm` would serve
//! it; the budget itself is on the raw size, what the engine compiles.

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::error::XtaskError;

/// A size limit on the optimised `.wasm`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// The largest acceptable raw size after `wasm-opt`, in bytes.
    pub(crate) max_raw_bytes: u64,
}

/// The package's budget: under 150 KB (150,000 bytes) raw after
/// `wasm-opt` (about 140 KB today; see "The npm package" in
/// docs/decisions.md for where the bytes go). Over it, the step fails.
pub(crate) const BUDGET: Budget = Budget {
    max_raw_bytes: 150_000,
};

/// One measurement of the `.wasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// Bytes on disk.
    pub(crate) raw: u64,
    /// Bytes gzipped at the best compression level.
    pub(crate) gzip: u64,
}

/// The `.wasm` as wasm-bindgen wrote it and as `wasm-opt` left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SizeReport {
    /// After wasm-bindgen, before `wasm-opt`.
    pub(crate) generated: Sizes,
    /// After `wasm-opt -Oz`: what the package ships.
    pub(crate) optimised: Sizes,
}

/// Measures the file at `path`.
pub(crate) fn measure(path: &Path) -> Result<Sizes, XtaskError> {
    let bytes = std::fs::read(path).map_err(XtaskError::io(path))?;
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    let gzipped = encoder
        .write_all(&bytes)
        .and_then(|()| encoder.finish())
        .map_err(XtaskError::io(path))?;
    Ok(Sizes {
        raw: len(bytes.len()),
        gzip: len(gzipped.len()),
    })
}

/// A byte count as `u64` (lossless on every platform Rust supports).
fn len(bytes: usize) -> u64 {
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// Fails unless the optimised size `raw` fits `budget`.
pub(crate) fn judge(budget: &Budget, raw: u64) -> Result<(), XtaskError> {
    if raw <= budget.max_raw_bytes {
        return Ok(());
    }
    Err(XtaskError::WasmOverBudget {
        raw,
        budget: budget.max_raw_bytes,
    })
}

/// The report as a Markdown table, then one line saying whether the
/// budget is met.
pub(crate) fn render(report: &SizeReport, budget: &Budget) -> String {
    let row = |label: &str, sizes: &Sizes| {
        format!(
            "| {label} | {} | {} |\n",
            bytes(sizes.raw),
            bytes(sizes.gzip)
        )
    };
    let mut text = String::from("| `loomfence_wasm_bg.wasm` | raw | gzip -9 |\n|---|---:|---:|\n");
    text.push_str(&row("after wasm-bindgen", &report.generated));
    text.push_str(&row("after wasm-opt -Oz", &report.optimised));
    let raw = report.optimised.raw;
    let verdict = if raw <= budget.max_raw_bytes {
        format!("met, {} to spare", bytes(budget.max_raw_bytes - raw))
    } else {
        format!("NOT met, {} over", bytes(raw - budget.max_raw_bytes))
    };
    text.push_str(&format!(
        "\nbudget: under {} raw after wasm-opt: {verdict}\n",
        bytes(budget.max_raw_bytes)
    ));
    text
}

/// A byte count with thousands separators and in KB (1 KB = 1000 bytes,
/// the unit the budget is stated in), e.g. `171,011 B (171.0 KB)`.
fn bytes(count: u64) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    #[allow(clippy::cast_precision_loss, reason = "a file size, shown to 0.1 KB")]
    let kb = count as f64 / 1000.0;
    format!("{grouped} B ({kb:.1} KB)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of the shape the build produces.
    const REPORT: SizeReport = SizeReport {
        generated: Sizes {
            raw: 310_005,
            gzip: 120_000,
        },
        optimised: Sizes {
            raw: 171_011,
            gzip: 70_500,
        },
    };

    /// A budget of `max` bytes.
    fn budget(max: u64) -> Budget {
        Budget { max_raw_bytes: max }
    }

    /// Sizes are grouped by thousands and given in KB.
    #[test]
    fn bytes_are_readable() {
        assert_eq!(bytes(0), "0 B (0.0 KB)");
        assert_eq!(bytes(999), "999 B (1.0 KB)");
        assert_eq!(bytes(150_000), "150,000 B (150.0 KB)");
        assert_eq!(bytes(1_234_567), "1,234,567 B (1234.6 KB)");
    }

    /// The table has both rows and the verdict.
    #[test]
    fn render_shows_both_measurements_and_the_verdict() {
        let text = render(&REPORT, &budget(150_000));
        assert!(
            text.contains("| after wasm-bindgen | 310,005 B (310.0 KB) | 120,000 B (120.0 KB) |"),
            "{text}"
        );
        assert!(
            text.contains("| after wasm-opt -Oz | 171,011 B (171.0 KB) | 70,500 B (70.5 KB) |"),
            "{text}"
        );
        assert!(text.contains("NOT met, 21,011 B (21.0 KB) over"), "{text}");
        let text = render(&REPORT, &budget(200_000));
        assert!(text.contains("met, 28,989 B (29.0 KB) to spare"), "{text}");
    }

    /// At or under budget passes; over budget fails.
    #[test]
    fn judge_follows_the_budget() {
        assert!(judge(&budget(171_011), 171_011).is_ok());
        match judge(&budget(150_000), 171_011) {
            Err(XtaskError::WasmOverBudget {
                raw: 171_011,
                budget: 150_000,
            }) => {}
            other => panic!("unexpected verdict: {other:?}"),
        }
    }

    /// Gzip really compresses, and raw is the file's length.
    #[test]
    fn measure_reads_and_gzips() {
        let path = std::env::temp_dir().join(format!("xtask-size-test.{}", std::process::id()));
        std::fs::write(&path, vec![0_u8; 10_000]).expect("write scratch file");
        let sizes = measure(&path);
        let _ = std::fs::remove_file(&path);
        let sizes = sizes.expect("readable file");
        assert_eq!(sizes.raw, 10_000);
        assert!(sizes.gzip < 200, "{sizes:?}");
    }
}
