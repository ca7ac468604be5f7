//! The wasm import check: proof that the pure core stays pure.
//!
//! `loomfence-wasm-probe` is a `cdylib` that links the pure core and exports
//! functions calling into it. Compiled for `wasm32-unknown-unknown`, anything
//! the core needs from the outside world shows up as a wasm *import*. Imports
//! from the module `"env"` are what rustc/LLVM emit for unresolved symbols: a
//! C dependency, a libc call, a clock. If one appears, platform-specific code
//! reached the core, which must then fail here rather than at load time in
//! somebody's browser.

use anyhow::{Context as _, Result, bail};
use wasmparser::{Encoding, ExternalKind, Parser, Payload};

use crate::cmd;
use crate::toolchain::WASM_TARGET;

/// The probe crate that links the pure core into a `.wasm` file.
const PROBE_PACKAGE: &str = "loomfence-wasm-probe";

/// What a module imports and exports, as far as the check cares.
#[derive(Debug, Default, PartialEq, Eq)]
struct Report {
    /// Every import, as `module.name`, in file order.
    imports: Vec<String>,
    /// Number of exports of any kind.
    exports: u32,
    /// Number of exported functions. Counted apart because rustc's cdylibs
    /// always export `memory`, `__data_end` and `__heap_base`, so "has
    /// exports" alone would not prove the probe kept any core code alive.
    function_exports: u32,
}

/// The `wasm-imports` step: builds the probe for wasm in release mode (so
/// dead code is stripped as it would be for users), checks it and prints
/// what it imports.
pub(crate) fn step() -> Result<()> {
    let mut build = cmd::cargo();
    build.args([
        "build",
        "--locked",
        "--release",
        "--target",
        WASM_TARGET,
        "-p",
        PROBE_PACKAGE,
    ]);
    cmd::run(&mut build)?;
    let path = cmd::target_dir()?
        .join(WASM_TARGET)
        .join("release")
        .join(format!("{}.wasm", PROBE_PACKAGE.replace('-', "_")));
    let bytes = std::fs::read(&path)
        .with_context(|| format!("{}: is `{PROBE_PACKAGE}` a cdylib?", path.display()))?;
    let report = check(&bytes)?;
    println!(
        "wasm probe {} ({} bytes): {} exports ({} functions), {} imports",
        path.display(),
        bytes.len(),
        report.exports,
        report.function_exports,
        report.imports.len()
    );
    for import in &report.imports {
        println!("    {import}");
    }
    Ok(())
}

/// Parses a core wasm module and fails if it imports anything from `"env"`
/// or exports no function; on success returns what it found.
fn check(bytes: &[u8]) -> Result<Report> {
    let mut report = Report::default();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.context("wasm probe is not a readable WebAssembly module")? {
            Payload::Version {
                encoding: Encoding::Component,
                ..
            } => {
                bail!("wasm probe is a WebAssembly component, expected a core module")
            }
            Payload::ImportSection(section) => {
                // `into_imports` flattens the compact import encodings too.
                for import in section.into_imports() {
                    let import = import?;
                    report
                        .imports
                        .push(format!("{}.{}", import.module, import.name));
                }
            }
            Payload::ExportSection(section) => {
                for export in section {
                    report.exports += 1;
                    report.function_exports += u32::from(export?.kind == ExternalKind::Func);
                }
            }
            _ => {}
        }
    }
    let env: Vec<&str> = report
        .imports
        .iter()
        .map(String::as_str)
        .filter(|i| i.starts_with("env."))
        .collect();
    if !env.is_empty() {
        bail!(
            "wasm probe imports from \"env\", so platform-specific code reached the pure core: {}",
            env.join(", ")
        );
    }
    if report.function_exports == 0 {
        bail!(
            "wasm probe exports no functions ({} exports in total): it must export something \
             that calls into the core, or the check proves nothing",
            report.exports
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends a LEB128-encoded `u32`, as wasm encodes every count and size.
    fn leb(out: &mut Vec<u8>, mut value: u32) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    /// Appends a length-prefixed UTF-8 name.
    fn name(out: &mut Vec<u8>, text: &str) {
        leb(out, u32::try_from(text.len()).expect("short name"));
        out.extend_from_slice(text.as_bytes());
    }

    /// Appends a section with the given id and contents.
    fn section(out: &mut Vec<u8>, id: u8, contents: &[u8]) {
        out.push(id);
        leb(out, u32::try_from(contents.len()).expect("small section"));
        out.extend_from_slice(contents);
    }

    /// A valid module importing the given `() -> ()` functions and
    /// exporting one memory plus `function_exports` functions.
    fn module(imports: &[(&str, &str)], function_exports: u32) -> Vec<u8> {
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        section(&mut wasm, 1, &[0x01, 0x60, 0x00, 0x00]);
        let mut contents = Vec::new();
        leb(&mut contents, u32::try_from(imports.len()).expect("few"));
        for (module, item) in imports {
            name(&mut contents, module);
            name(&mut contents, item);
            contents.extend_from_slice(&[0x00, 0x00]);
        }
        section(&mut wasm, 2, &contents);
        section(&mut wasm, 3, &[0x01, 0x00]);
        section(&mut wasm, 5, &[0x01, 0x00, 0x01]);
        let mut contents = Vec::new();
        leb(&mut contents, function_exports + 1);
        name(&mut contents, "memory");
        contents.extend_from_slice(&[0x02, 0x00]);
        let defined = u32::try_from(imports.len()).expect("few");
        for index in 0..function_exports {
            name(&mut contents, &format!("f{index}"));
            contents.push(0x00);
            leb(&mut contents, defined);
        }
        section(&mut wasm, 7, &contents);
        section(&mut wasm, 10, &[0x01, 0x02, 0x00, 0x0b]);
        wasm
    }

    /// Imports from other modules are the host's business and pass; every
    /// `env` import is named, not just the first.
    #[test]
    fn env_imports_fail_and_are_all_named() {
        let host = [
            ("wasi_snapshot_preview1", "fd_write"),
            ("__wbindgen_placeholder__", "x"),
        ];
        let report = check(&module(&host, 2)).expect("no env import");
        assert_eq!(
            report.imports,
            [
                "wasi_snapshot_preview1.fd_write",
                "__wbindgen_placeholder__.x"
            ]
        );
        assert_eq!((report.exports, report.function_exports), (3, 2));
        assert!(check(&module(&[], 1)).expect("pure").imports.is_empty());
        let err = check(&module(&[("env", "a"), ("wasi", "b"), ("env", "c")], 1)).expect_err("env");
        assert!(err.to_string().ends_with("core: env.a, env.c"), "{err}");
    }

    /// Exporting only memory (what an empty cdylib does) proves nothing;
    /// garbage, truncated files and components are refused.
    #[test]
    fn refuses_what_proves_nothing() {
        let err = check(&module(&[], 0)).expect_err("no function exports");
        assert!(
            err.to_string().contains("exports no functions (1 exports"),
            "{err}"
        );
        assert!(check(b"definitely not wasm").is_err());
        let wasm = module(&[], 1);
        let err = check(&wasm[..wasm.len() - 3]).expect_err("truncated");
        assert!(err.to_string().contains("not a readable"), "{err}");
        let err = check(b"\0asm\x0d\0\x01\0").expect_err("a component");
        assert!(err.to_string().contains("component"), "{err}");
    }
}
