//! `cargo xtask wasm-sizes`: where the bytes of the npm package's modules
//! are, by crate and, for the package's own code, by the machine whose
//! exports it is inlined into.
//!
//! Each module is built as `cargo xtask npm` builds it, but with its
//! function names kept (`wasm-bindgen --keep-debug`, `wasm-opt -Oz -g`), so
//! that `twiggy top` can name every function; the names section itself is
//! left out of the sums, which therefore match the shipped `.wasm` to
//! within a few hundred bytes. twiggy is installed with `cargo install`
//! when missing. Not part of the test pipeline: it explains a size, the
//! budgets in [`npm::MODULES`] enforce one.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Context as _, Result};

use crate::npm::{self, MODULES, Module};
use crate::{cmd, toolchain};

/// The twiggy release the table was made with.
const TWIGGY_VERSION: &str = "0.8.0";

/// The export prefixes (wasm-bindgen's lower-cased class or function name)
/// and the machine each belongs to.
const EXPORTS: [(&str, &str); 19] = [
    ("memoryeventstore", "MemoryEventStore"),
    ("resumemachine", "ResumeMachine"),
    ("resumeInMemory", "resumeInMemory"),
    ("locatePark", "kind table"),
    ("isAnsweringKind", "kind table"),
    ("kernelEventKinds", "kind table"),
    ("delivermachine", "DeliverMachine (inbox)"),
    ("sweepmachine", "SweepMachine (retention)"),
    ("memorytimerstore", "MemoryTimerStore (timers, inbox)"),
    ("tickmachine", "TickMachine (timer service)"),
    ("supervisemachine", "SuperviseMachine"),
    ("followmachine", "FollowMachine (feed)"),
    ("firemachine", "FireMachine"),
    ("wakebackoff", "WakeBackoff"),
    ("redrivepolicy", "RedrivePolicy"),
    ("redriveWakeAt", "RedrivePolicy"),
    ("startedChild", "lineage"),
    ("parentOf", "lineage"),
    ("pinParkedChildren", "lineage"),
];

/// The binding's modules that serve one machine, and which.
const BINDING_MODULES: [(&str, &str); 14] = [
    ("memory_store", "MemoryEventStore"),
    ("kinds", "kind table"),
    ("deliver", "DeliverMachine (inbox)"),
    ("inbox_values", "DeliverMachine (inbox)"),
    ("sweep", "SweepMachine (retention)"),
    ("timer_store", "MemoryTimerStore (timers, inbox)"),
    ("tick", "TickMachine (timer service)"),
    ("claim_page", "TickMachine (timer service)"),
    ("supervise", "SuperviseMachine"),
    ("follow", "FollowMachine (feed)"),
    ("fire", "FireMachine"),
    ("wake_backoff", "WakeBackoff"),
    ("redrive", "RedrivePolicy"),
    ("lineage", "lineage"),
];

/// Crates and the standard library's parts, by the path a function's name
/// starts with.
const CRATES: [(&str, &str); 10] = [
    ("loomfence_wasm::", "binding, shared"),
    ("serde_json::", "serde_json"),
    ("serde::", "serde"),
    ("itoa::", "serde_json"),
    ("wasm_bindgen::", "wasm-bindgen, js-sys"),
    ("js_sys::", "wasm-bindgen, js-sys"),
    ("dlmalloc::", "dlmalloc"),
    ("alloc::", "std alloc (Vec, String, BTreeMap, HashMap)"),
    ("hashbrown::", "std alloc (Vec, String, BTreeMap, HashMap)"),
    ("core::", "std core (fmt, iterators, str)"),
];

/// `cargo xtask wasm-sizes`: one table per module.
pub(crate) fn run() -> Result<()> {
    toolchain::ensure_rustup_pieces()?;
    toolchain::ensure_wasm_bindgen()?;
    npm::install_tools()?;
    if cmd::probe(Command::new("twiggy").arg("--version")).is_none() {
        cmd::note("twiggy not found: installing it");
        cmd::run(cmd::cargo().args([
            "install",
            "--locked",
            "twiggy",
            "--version",
            TWIGGY_VERSION,
        ]))?;
    }
    let scratch = std::env::temp_dir().join(format!("loomfence-wasm-sizes.{}", std::process::id()));
    let mut tables = String::new();
    for module in &MODULES {
        let named = build_named(module, &scratch)?;
        let top = cmd::capture(
            Command::new("twiggy")
                .args(["top", "-n", "1000000", "-f", "json"])
                .arg(&named),
        )?;
        tables.push_str(&table(module, &top)?);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    print!("{tables}");
    Ok(())
}

/// `module`, built with its names kept, in `scratch`.
fn build_named(module: &Module, scratch: &std::path::Path) -> Result<std::path::PathBuf> {
    let input = npm::cargo_build(module)?;
    let out = scratch.join(module.stem);
    cmd::run(
        Command::new("wasm-bindgen")
            .args([
                "--keep-debug",
                "--target",
                "web",
                "--no-typescript",
                "--out-name",
                module.stem,
                "--out-dir",
            ])
            .arg(&out)
            .arg(input),
    )?;
    let wasm = out.join(format!("{}_bg.wasm", module.stem));
    cmd::run(
        npm::tools()
            .args(["run", "opt", "--", "-g"])
            .arg(&wasm)
            .arg("-o")
            .arg(&wasm),
    )?;
    Ok(wasm)
}

/// The Markdown table of twiggy's `top` answer (JSON), bytes per group,
/// largest first.
fn table(module: &Module, top: &str) -> Result<String> {
    let top: serde_json::Value = serde_json::from_str(top).context("twiggy's JSON")?;
    // `top` answers a list of items (`dominators` wraps its own in `items`).
    let items = top
        .as_array()
        .or_else(|| top["items"].as_array())
        .context("twiggy's JSON is not a list of items")?;
    let mut groups: BTreeMap<String, u64> = BTreeMap::new();
    for item in items {
        let name = item["name"].as_str().unwrap_or_default();
        let size = item["shallow_size"].as_u64().unwrap_or_default();
        if let Some(group) = group(name) {
            *groups.entry(group).or_default() += size;
        }
    }
    let total: u64 = groups.values().sum();
    let mut rows: Vec<_> = groups.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kb = |bytes: u64| format!("{:.1}", bytes as f64 / 1000.0);
    let mut text = format!(
        "\n`{}_bg.wasm`\n\n| part | KB | share |\n|---|---:|---:|\n",
        module.stem
    );
    for (group, bytes) in rows {
        text.push_str(&format!(
            "| {group} | {} | {:.0}% |\n",
            kb(bytes),
            100.0 * bytes as f64 / total as f64
        ));
    }
    text.push_str(&format!(
        "| **total** (names excluded) | **{}** | |\n",
        kb(total)
    ));
    Ok(text)
}

/// The group of one of twiggy's items; `None` for the names section.
fn group(name: &str) -> Option<String> {
    if name.contains("\"function names\"") || name.contains("\"local names\"") {
        return None;
    }
    if name.starts_with("data segment") {
        return Some("data (strings, tables)".into());
    }
    // An export's shim, into which wasm-opt inlined the binding and core
    // code only that export calls: `sweepmachine_poll multivalue shim`,
    // `resumeInMemory externref shim`.
    if name.contains(" shim") {
        let export = name.split(' ').next().unwrap_or_default();
        let prefix = export.split('_').next().unwrap_or_default();
        return Some(
            EXPORTS
                .iter()
                .find(|(known, _)| *known == prefix)
                .map_or("wasm-bindgen glue", |(_, machine)| machine)
                .into(),
        );
    }
    // Rust symbols carry the crate's hash: `core[c5930c85a12de822]::fmt`.
    let bare = strip_hashes(name);
    let path = bare.trim_start_matches(['<', '&']);
    if let Some(rest) = path.strip_prefix("loomfence_wasm::") {
        let module = rest.split("::").next().unwrap_or_default();
        if let Some((_, machine)) = BINDING_MODULES.iter().find(|(known, _)| *known == module) {
            return Some((*machine).into());
        }
    }
    // The core's code that was not inlined into an export, by its module.
    if let Some(rest) = path.strip_prefix("loomfence_core::") {
        let module = rest.split("::").next().unwrap_or_default();
        return Some(format!("loomfence_core::{module}, not inlined"));
    }
    for (prefix, crate_name) in CRATES {
        if path.starts_with(prefix) || bare.contains(&format!(" as {prefix}")) {
            return Some(crate_name.into());
        }
    }
    if path.starts_with("std::")
        || path.starts_with("zmij::")
        || path.starts_with("char")
        || path.starts_with("str")
    {
        return Some("std core (fmt, iterators, str)".into());
    }
    if path.starts_with("mem") || path.starts_with("__") || path.starts_with("compiler_builtins") {
        return Some("compiler builtins (memcpy, …)".into());
    }
    Some("wasm structure, unnamed code".into())
}

/// `name` without the `[0123456789abcdef]` crate hashes of Rust symbols.
fn strip_hashes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let hash = &rest[open + 1..];
        let is_hash = hash.len() > 16
            && hash.as_bytes()[16] == b']'
            && hash[..16].bytes().all(|b| b.is_ascii_hexdigit());
        if is_hash {
            out.push_str(&rest[..open]);
            rest = &hash[17..];
        } else {
            out.push_str(&rest[..=open]);
            rest = hash;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exports go to their machine, Rust symbols to their crate (hash or
    /// not), binding modules to their machine, names to nothing.
    #[test]
    fn items_are_grouped_by_machine_then_crate() {
        let cases = [
            (
                "sweepmachine_poll multivalue shim",
                Some("SweepMachine (retention)"),
            ),
            ("resumeInMemory externref shim", Some("resumeInMemory")),
            (
                "__wbindgen_malloc externref shim",
                Some("wasm-bindgen glue"),
            ),
            ("\"function names\" subsection", None),
            ("data segment \".rodata\"", Some("data (strings, tables)")),
            (
                "<core[c5930c85a12de822]::iter::adapters::GenericShunt<I,R> as core[c5930c85a12de822]::iter::Iterator>::next",
                Some("std core (fmt, iterators, str)"),
            ),
            (
                "<loomfence_core::input::InputError as core::fmt::Display>::fmt::hf94b",
                Some("loomfence_core::input, not inlined"),
            ),
            (
                "loomfence_wasm::sweep::reads::h12",
                Some("SweepMachine (retention)"),
            ),
            (
                "loomfence_wasm::values::counter::h1",
                Some("binding, shared"),
            ),
            (
                "<dlmalloc[e24a27700634d609]::dlmalloc::Dlmalloc<A>>::malloc",
                Some("dlmalloc"),
            ),
            ("memcpy", Some("compiler builtins (memcpy, …)")),
            ("code[1010]", Some("wasm structure, unnamed code")),
        ];
        for (name, expected) in cases {
            assert_eq!(group(name).as_deref(), expected, "{name}");
        }
    }

    /// Only 16 hex digits in brackets are a hash.
    #[test]
    fn only_crate_hashes_are_stripped() {
        assert_eq!(strip_hashes("core[c5930c85a12de822]::fmt"), "core::fmt");
        assert_eq!(strip_hashes("table[0]"), "table[0]");
        assert_eq!(strip_hashes("[u8; 4]"), "[u8; 4]");
    }
}
