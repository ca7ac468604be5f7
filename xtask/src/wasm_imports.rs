//! The wasm import check: proof that the pure core stays pure.
//!
//! `loomfence-wasm-probe` is a `cdylib` that links the pure core and exports
//! functions calling into it. Compiled for `wasm32-unknown-unknown`, anything
//! the core needs from the outside world shows up as a wasm *import*. Imports
//! from the module `"env"` are what rustc/LLVM emit for unresolved symbols: a
//! C dependency, a libc call, a clock. If one appears, platform-specific code
//! reached the core, which must then fail loudly rather than at load time in
//! somebody's browser.

use std::io::ErrorKind;

use wasmparser::{Encoding, ExternalKind, Parser, Payload};

use crate::error::XtaskError;
use crate::test::Context;
use crate::toolchain::WASM_TARGET;

/// The probe crate that links the pure core into a `.wasm` file.
const PROBE_PACKAGE: &str = "loomfence-wasm-probe";

/// The file the probe compiles to (cargo turns `-` into `_` for cdylibs).
const PROBE_FILE: &str = "loomfence_wasm_probe.wasm";

/// The import module that betrays platform-specific code.
const FORBIDDEN_MODULE: &str = "env";

/// One imported item of a wasm module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WasmImport {
    /// The module it is imported from, e.g. `wasi_snapshot_preview1`.
    pub(crate) module: String,
    /// The item's name within that module.
    pub(crate) name: String,
}

impl std::fmt::Display for WasmImport {
    /// Shown as `module.name`, the usual notation in wasm tooling.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.module, self.name)
    }
}

/// What the import check found in a module that passed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WasmReport {
    /// Size of the module in bytes, to notice the core growing.
    pub(crate) size_bytes: usize,
    /// Every import, in file order.
    pub(crate) imports: Vec<WasmImport>,
    /// Number of exports of any kind.
    pub(crate) exports: u32,
    /// Number of exported functions. Counted apart because rustc's cdylibs
    /// always export `memory`, `__data_end` and `__heap_base`, so "has
    /// exports" alone would not prove the probe kept any core code alive.
    pub(crate) function_exports: u32,
}

/// Parses a core wasm module and fails if it imports anything from `"env"`
/// or exports no function; on success returns what it found.
pub(crate) fn check_imports(bytes: &[u8]) -> Result<WasmReport, XtaskError> {
    let report = inspect(bytes)?;
    let forbidden: Vec<String> = report
        .imports
        .iter()
        .filter(|import| import.module == FORBIDDEN_MODULE)
        .map(ToString::to_string)
        .collect();
    if !forbidden.is_empty() {
        return Err(XtaskError::WasmEnvImports { imports: forbidden });
    }
    if report.function_exports == 0 {
        return Err(XtaskError::WasmNoFunctionExports {
            exports: report.exports,
        });
    }
    Ok(report)
}

/// Reads imports and export counts from a core wasm module, judging nothing.
fn inspect(bytes: &[u8]) -> Result<WasmReport, XtaskError> {
    let mut report = WasmReport {
        size_bytes: bytes.len(),
        imports: Vec::new(),
        exports: 0,
        function_exports: 0,
    };
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::Version {
                encoding: Encoding::Component,
                ..
            } => return Err(XtaskError::WasmNotCoreModule),
            Payload::ImportSection(section) => {
                // `into_imports` flattens the compact import encodings too.
                for import in section.into_imports() {
                    let import = import?;
                    report.imports.push(WasmImport {
                        module: import.module.to_owned(),
                        name: import.name.to_owned(),
                    });
                }
            }
            Payload::ExportSection(section) => {
                for export in section {
                    let export = export?;
                    report.exports += 1;
                    if export.kind == ExternalKind::Func {
                        report.function_exports += 1;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(report)
}

/// Pipeline step: builds the probe for wasm in release mode (so dead code is
/// stripped exactly as it would be for users), checks its imports and prints
/// what it found.
pub(crate) fn step(context: &Context<'_>) -> Result<(), XtaskError> {
    let mut build = context.cargo();
    build.args([
        "build",
        "--locked",
        "--release",
        "--target",
        WASM_TARGET,
        "-p",
        PROBE_PACKAGE,
    ]);
    context.run(&mut build)?;

    let path = crate::workspace::target_dir(context.step, context.root)?
        .join(WASM_TARGET)
        .join("release")
        .join(PROBE_FILE);
    let bytes = std::fs::read(&path).map_err(|source| {
        if source.kind() == ErrorKind::NotFound {
            XtaskError::WasmMissing {
                path: path.clone(),
                package: PROBE_PACKAGE.to_owned(),
            }
        } else {
            XtaskError::Io {
                path: path.clone(),
                source,
            }
        }
    })?;
    let report = check_imports(&bytes)?;
    print!("{}", render(&report, &path.display().to_string()));
    Ok(())
}

/// Formats a passing report: file, size, export counts, then one import per
/// line, so the log shows exactly what the core needs from its host.
fn render(report: &WasmReport, file: &str) -> String {
    let mut text = format!(
        "wasm probe {file}\n  size: {} bytes ({:.1} KiB)\n  exports: {} ({} functions)\n  imports: {}\n",
        report.size_bytes,
        report.size_bytes as f64 / 1024.0,
        report.exports,
        report.function_exports,
        report.imports.len(),
    );
    for import in &report.imports {
        text.push_str(&format!("    {import}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-assembled module: one function type `() -> ()`, an import of
    /// `env.now` and one of `wasi_snapshot_preview1.fd_write` (both of that
    /// type), one defined function, exported as `run`.
    const ENV_AND_WASI: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: [] -> []
        0x02, 0x2d, 0x02, // import section, 45 bytes, 2 imports
        0x03, b'e', b'n', b'v', 0x03, b'n', b'o', b'w', 0x00, 0x00, // env.now
        0x16, b'w', b'a', b's', b'i', b'_', b's', b'n', b'a', b'p', b's', b'h', b'o', b't', b'_',
        b'p', b'r', b'e', b'v', b'i', b'e', b'w', b'1', // "wasi_snapshot_preview1"
        0x08, b'f', b'd', b'_', b'w', b'r', b'i', b't', b'e', 0x00, 0x00, // .fd_write
        0x03, 0x02, 0x01, 0x00, // function section: 1 function of type 0
        0x07, 0x07, 0x01, 0x03, b'r', b'u', b'n', 0x00, 0x02, // export "run" = func 2
        0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code: empty body
    ];

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

    /// Builds a valid module importing the given functions and exporting one
    /// memory plus `function_exports` functions, so tests can vary exactly
    /// the property they check.
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

    /// The brief's scenario, byte for byte: the `env` import is rejected and
    /// named; the `wasi` one is not blamed.
    #[test]
    fn rejects_env_import_in_hand_written_module() {
        let err = check_imports(ENV_AND_WASI).expect_err("env import must fail");
        match err {
            XtaskError::WasmEnvImports { imports } => assert_eq!(imports, ["env.now"]),
            other => panic!("unexpected error: {other}"),
        }
    }

    /// The hand-written module parses to exactly what it encodes, which also
    /// cross-checks the byte counts in [`ENV_AND_WASI`].
    #[test]
    fn inspects_hand_written_module() {
        let report = inspect(ENV_AND_WASI).expect("valid module");
        let shown: Vec<String> = report.imports.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["env.now", "wasi_snapshot_preview1.fd_write"]);
        assert_eq!(report.exports, 1);
        assert_eq!(report.function_exports, 1);
        assert_eq!(report.size_bytes, ENV_AND_WASI.len());
    }

    /// Imports from other modules are the host's business and pass.
    #[test]
    fn accepts_non_env_imports() {
        let wasm = module(
            &[
                ("wasi_snapshot_preview1", "fd_write"),
                ("__wbindgen_placeholder__", "__wbindgen_describe"),
            ],
            2,
        );
        let report = check_imports(&wasm).expect("no env import");
        assert_eq!(report.imports.len(), 2);
        assert_eq!(report.exports, 3);
        assert_eq!(report.function_exports, 2);
    }

    /// A module with no imports at all is the ideal case.
    #[test]
    fn accepts_module_without_imports() {
        let report = check_imports(&module(&[], 1)).expect("pure module");
        assert!(report.imports.is_empty());
    }

    /// Every `env` import is listed, not just the first.
    #[test]
    fn lists_every_env_import() {
        let wasm = module(&[("env", "a"), ("wasi", "b"), ("env", "c")], 1);
        match check_imports(&wasm) {
            Err(XtaskError::WasmEnvImports { imports }) => {
                assert_eq!(imports, ["env.a", "env.c"]);
            }
            other => panic!("unexpected result: {other:?}"),
        }
    }

    /// Exporting only memory (what an empty cdylib does) proves nothing.
    #[test]
    fn rejects_module_without_function_exports() {
        match check_imports(&module(&[], 0)) {
            Err(XtaskError::WasmNoFunctionExports { exports: 1 }) => {}
            other => panic!("unexpected result: {other:?}"),
        }
    }

    /// Garbage and truncated files are parse errors, not passes.
    #[test]
    fn rejects_non_wasm_bytes() {
        assert!(matches!(
            check_imports(b"definitely not wasm"),
            Err(XtaskError::WasmParse(_))
        ));
        let truncated = &ENV_AND_WASI[..ENV_AND_WASI.len() - 3];
        assert!(matches!(
            check_imports(truncated),
            Err(XtaskError::WasmParse(_))
        ));
    }

    /// A component header is refused: the check is defined for core modules.
    #[test]
    fn rejects_components() {
        let component = b"\0asm\x0d\0\x01\0";
        assert!(matches!(
            check_imports(component),
            Err(XtaskError::WasmNotCoreModule)
        ));
    }

    /// The log lists every import as `module.name` with size and counts.
    #[test]
    fn render_lists_imports() {
        let report = inspect(ENV_AND_WASI).expect("valid module");
        let text = render(&report, "probe.wasm");
        let size = format!("size: {} bytes", ENV_AND_WASI.len());
        assert!(text.contains(&size), "{text}");
        assert!(text.contains("exports: 1 (1 functions)"), "{text}");
        assert!(text.contains("    env.now\n"), "{text}");
        assert!(
            text.contains("    wasi_snapshot_preview1.fd_write\n"),
            "{text}"
        );
    }
}
