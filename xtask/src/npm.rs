//! The npm package `loomfence`: building `wasm/npm/dist`, and proving the
//! package works the way a user installs it.
//!
//! The entry points (`index.js`, `index.cjs`, `browser.js`, `index.d.ts`
//! for `loomfence`; `services.js`, `services.cjs`, `services-browser.js`,
//! `services.d.ts` for `loomfence/services`) are hand-written; what is
//! built is `dist/`: for each of the two modules ([`MODULES`]),
//! wasm-bindgen's `--target web` glue and the `.wasm`, shrunk by binaryen's
//! `wasm-opt -Oz`. The JS build steps are npm scripts of `wasm/npm-tools`,
//! which pins binaryen (Debian's is too old: its output crashes at load
//! time) and TypeScript: `npm run clean`, `npm run bindgen -- <name>
//! <file.wasm>`, `npm run opt -- <file> -o <file>`, `npm run typecheck --
//! <files>`. This module runs them in order and keeps what no script
//! checks: the size budgets and the package as a user gets it.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, Result, bail};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::cmd;
use crate::toolchain::{self, WASM_TARGET};

/// The npm package's folder, relative to the workspace root.
const PACKAGE_DIR: &str = "wasm/npm";

/// The private npm package that pins the build tools and holds the scripts.
const TOOLS_DIR: &str = "wasm/npm-tools";

/// The JavaScript suites, run against the package built here.
const SUITES_DIR: &str = "tests/conformance-js";

/// The package's benchmarks.
const BENCH_DIR: &str = "wasm/bench";

/// One WebAssembly module of the package: the crate's cargo feature that
/// selects its exports, the stem of its files in `dist/` and its budget.
pub(crate) struct Module {
    /// The `loomfence-wasm` feature that builds it.
    pub(crate) feature: &'static str,
    /// `dist/<stem>.js` (the glue) and `dist/<stem>_bg.wasm`.
    pub(crate) stem: &'static str,
    /// The largest acceptable `.wasm`, raw bytes after `wasm-opt` (what the
    /// engine compiles). `wasm/README.md` and "The npm package" in
    /// `docs/decisions.md` quote it (a test checks), and the latter says
    /// where the bytes go and why each raise was taken.
    pub(crate) budget: u64,
}

/// The package's modules, the one statement of their budgets: the resume
/// entry (`loomfence`), which a page that only resumes loads alone, and
/// the services (`loomfence/services`: timers, re-drive, retention,
/// supervision, the follower, the inbox), loaded when first imported.
pub(crate) const MODULES: [Module; 2] = [
    Module {
        feature: "resume",
        stem: "loomfence_resume",
        budget: 150_000,
    },
    Module {
        feature: "services",
        stem: "loomfence_services",
        budget: 280_000,
    },
];

/// The README line after which comes the Node example the package promises.
const README_MARKER: &str = "<!-- npm-example -->";

/// `cargo xtask npm`: the wasm target (as the pipeline's toolchain step
/// would install it), then [`build`].
pub(crate) fn run() -> Result<()> {
    toolchain::ensure_rustup_pieces()?;
    build()
}

/// The `npm-build` step: installs wasm-bindgen-cli and the npm tools when
/// missing, builds `dist/` (each of [`MODULES`] in turn) and prints each
/// `.wasm`'s sizes; one over its budget fails.
pub(crate) fn build() -> Result<()> {
    toolchain::ensure_wasm_bindgen()?;
    install_tools()?;
    cmd::run(tools().args(["run", "clean"]))?;
    let kb = |bytes: u64| format!("{:.1} KB", bytes as f64 / 1000.0);
    let mut table = String::from(
        "| module | after wasm-bindgen (raw / gzip -9) | after wasm-opt -Oz (raw / gzip -9) | budget (raw) |\n|---|---:|---:|---|\n",
    );
    let mut over = Vec::new();
    for module in &MODULES {
        let [generated, optimised] = build_module(module)?;
        table.push_str(&format!(
            "| `{}_bg.wasm` | {} / {} | {} / {} | {}: {} |\n",
            module.stem,
            kb(generated[0]),
            kb(generated[1]),
            kb(optimised[0]),
            kb(optimised[1]),
            kb(module.budget),
            verdict(module.budget, optimised[0])
        ));
        if optimised[0] > module.budget {
            over.push(format!(
                "{}_bg.wasm is {} bytes after wasm-opt, over its budget of {}",
                module.stem, optimised[0], module.budget
            ));
        }
    }
    // After every build's own output, so it reads as one table.
    print!("{table}");
    one_snippet_folder()?;
    if !over.is_empty() {
        bail!("npm package: {}", over.join("; "));
    }
    Ok(())
}

/// Installs the build tools of `wasm/npm-tools`: npm's own "exactly the
/// lockfile"; about 3 s with a warm cache.
pub(crate) fn install_tools() -> Result<()> {
    cmd::run(tools().args(["ci", "--prefer-offline", "--no-audit", "--no-fund"]))
}

/// An `npm` command in `wasm/npm-tools`, whose scripts run the build tools.
pub(crate) fn tools() -> Command {
    npm(TOOLS_DIR)
}

/// Builds the crate with only `module`'s feature; the `.wasm` cargo wrote
/// (the next build overwrites it).
pub(crate) fn cargo_build(module: &Module) -> Result<PathBuf> {
    let mut build = cmd::cargo();
    build.args([
        "build",
        "--locked",
        "-p",
        "loomfence-wasm",
        "--target",
        WASM_TARGET,
        "--profile",
        "wasm-release",
        "--no-default-features",
        "--features",
        module.feature,
    ]);
    cmd::run(&mut build)?;
    Ok(cmd::target_dir()?
        .join(WASM_TARGET)
        .join("wasm-release/loomfence_wasm.wasm"))
}

/// Builds one module into `dist/`: the crate with only `module`'s
/// feature, wasm-bindgen's glue, then `wasm-opt`. Its sizes (raw, gzip)
/// after wasm-bindgen and after `wasm-opt`.
fn build_module(module: &Module) -> Result<[[u64; 2]; 2]> {
    let input = cargo_build(module)?;
    cmd::run(
        tools()
            .args(["run", "bindgen", "--", module.stem])
            .arg(input),
    )?;
    let wasm = cmd::root()
        .join(PACKAGE_DIR)
        .join(format!("dist/{}_bg.wasm", module.stem));
    let generated = sizes(&wasm)?;
    cmd::run(
        tools()
            .args(["run", "opt", "--"])
            .arg(&wasm)
            .arg("-o")
            .arg(&wasm),
    )?;
    Ok([generated, sizes(&wasm)?])
}

/// Both modules' glue must import the one `snippets/<crate>-<hash>/`
/// folder: its `errors.js` is then one ES module, so an error either
/// module throws is an instance of the classes both entries export. The
/// hash is wasm-bindgen's for the crate, the same for both builds; a
/// second folder would mean two sets of classes.
fn one_snippet_folder() -> Result<()> {
    let snippets = cmd::root().join(PACKAGE_DIR).join("dist/snippets");
    let folders: Vec<_> = fs::read_dir(&snippets)
        .with_context(|| snippets.display().to_string())?
        .collect::<Result<_, _>>()?;
    if folders.len() != 1 {
        bail!(
            "npm package: {} snippet folders in dist/snippets, not one: the modules would not share their error classes",
            folders.len()
        );
    }
    Ok(())
}

/// Whether `raw` bytes meet `budget`, and by how much.
fn verdict(budget: u64, raw: u64) -> String {
    match budget.checked_sub(raw) {
        Some(spare) => format!("met, {spare} to spare"),
        None => format!("NOT met, {} over", raw - budget),
    }
}

/// The file's size raw and gzipped at the best level, as a CDN serves it.
fn sizes(path: &Path) -> Result<[u64; 2]> {
    let bytes = fs::read(path).with_context(|| path.display().to_string())?;
    let mut gzip = GzEncoder::new(Vec::new(), Compression::best());
    gzip.write_all(&bytes)?;
    Ok([bytes.len() as u64, gzip.finish()?.len() as u64])
}

/// The `npm-test` step, on what `npm-build` made: the wasm crate's tests
/// under Node, the package as installed from its tarball, its browser
/// entry in Chromium, the JS suites, then the benchmarks, run small.
pub(crate) fn test(warnings: &mut Vec<String>) -> Result<()> {
    // The workspace clippy step builds this crate for the host, where the
    // wasm-only test files compile to nothing: lint them for their target.
    let wasm_crate = ["--locked", "-p", "loomfence-wasm", "--target", WASM_TARGET];
    let mut clippy = cmd::cargo();
    clippy
        .arg("clippy")
        .args(wasm_crate)
        .args(["--all-targets", "--", "-D", "warnings"]);
    cmd::run(&mut clippy)?;
    // `.cargo/config.toml` makes wasm-bindgen-test-runner run each test
    // binary under Node. `--tests` leaves out doctests (the host `test`
    // step runs them; for wasm they are plain programs). No `-q` and no user
    // test arguments: cargo hands them to the runner, which rejects them.
    cmd::run(cmd::cargo().arg("test").args(wasm_crate).arg("--tests"))?;
    smoke()?;
    browser(warnings)?;
    js_suites()?;
    benches_run()
}

/// An `npm` command run in `dir` (relative to the workspace root), its
/// output sent to stderr so that stdout carries only results.
fn npm(dir: impl AsRef<Path>) -> Command {
    let mut command = Command::new("npm");
    command
        .current_dir(cmd::root().join(dir))
        .stdout(std::io::stderr());
    command
}

/// The package as a user gets it: `npm pack`'s tarball installed into an
/// empty project, where `examples/smoke.mjs` (`import`), `smoke.cjs`
/// (`require`) and the README's example run, and `types.ts`/`types.cts`
/// type-check (`tsc --strict`) against its `index.d.ts`. Catches what
/// tests of the work tree cannot: a file missing from `files`, an entry
/// point that works only beside the sources, types that do not match the
/// API, a README example that does not run as written.
fn smoke() -> Result<()> {
    let package = cmd::root().join(PACKAGE_DIR);
    let scratch = Scratch::new("loomfence-npm-smoke")?;
    // A folder not named `loomfence`: npm refuses to install a package
    // into a project of the same name.
    let project = scratch.0.join("project");
    fs::create_dir(&project)?;
    let mut pack = Command::new("npm");
    pack.current_dir(&package)
        .args(["pack", "--pack-destination"])
        .arg(&scratch.0);
    cmd::note(&format!("$ {}", cmd::describe(&pack)));
    let packed = cmd::capture(&mut pack)?;
    let tarball = scratch
        .0
        .join(packed.lines().last().context("npm pack named no tarball")?);
    // Quiet: it prints the whole package.json it wrote.
    cmd::run(npm(&project).args(["init", "-y"]).stdout(Stdio::null()))?;
    cmd::run(
        npm(&project)
            .args(["install", "--no-audit", "--no-fund"])
            .arg(tarball),
    )?;

    let manifest = fs::read_to_string(package.join("package.json"))?;
    let manifest: serde_json::Value = serde_json::from_str(&manifest).context("package.json")?;
    let installed = project.join("node_modules/loomfence");
    let missing: Vec<&str> = manifest["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .filter(|file| !file.contains(['*', '?', '[']) && !installed.join(file).exists())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{PACKAGE_DIR}/package.json lists files its tarball lacks: {}",
            missing.join(", ")
        );
    }

    for example in ["smoke.mjs", "smoke.cjs", "types.ts", "types.cts"] {
        let source = package.join("examples").join(example);
        fs::copy(&source, project.join(example)).with_context(|| source.display().to_string())?;
    }
    let readme = fs::read_to_string(cmd::root().join("README.md"))?;
    // `.mjs`, so it runs as an ES module whatever the project's `type`;
    // `.mts`, the same text type-checked as a strict TypeScript user has it.
    let example = readme_example(&readme)?;
    fs::write(project.join("readme-example.mjs"), example)?;
    fs::write(project.join("readme-example.mts"), example)?;
    for script in ["smoke.mjs", "smoke.cjs", "readme-example.mjs"] {
        cmd::run(Command::new("node").current_dir(&project).arg(script))?;
    }
    let mut typecheck = tools();
    typecheck
        .args(["run", "typecheck", "--"])
        .arg(project.join("types.ts"))
        .arg(project.join("readme-example.mts"));
    cmd::run(typecheck.arg(project.join("types.cts")))
}

/// The ```` ```js ```` block right after the line [`README_MARKER`]; a README
/// without it fails, as the example is part of what the package promises.
fn readme_example(readme: &str) -> Result<&str> {
    let (_, after) = readme
        .split_once(&format!("\n{README_MARKER}\n"))
        .with_context(|| format!("README.md: no `{README_MARKER}` line before the Node example"))?;
    let code = after
        .trim_start()
        .strip_prefix("```js\n")
        .with_context(|| {
            format!("README.md: `{README_MARKER}` must be followed by a ```js block")
        })?;
    let end = code
        .find("\n```")
        .context("README.md: the npm example's block is never closed")?;
    Ok(&code[..=end])
}

/// The browser entry (`browser.js`) in headless Chromium over HTTP, as a
/// web page loads it: `examples/serve.mjs` serves `wasm/npm` on a free
/// loopback port, and `examples/browser.html` must read `PASS` in its
/// `#result` once settled. Chromium is installed when missing (as root);
/// when it cannot be had, CI fails and elsewhere the check is skipped with
/// a warning.
fn browser(warnings: &mut Vec<String>) -> Result<()> {
    if let Err(err) = ensure_chromium() {
        if cmd::is_ci() {
            return Err(err.context("CI is set, so the browser check may not be skipped"));
        }
        let warning = format!("no Chromium, the browser check was SKIPPED: {err:#}");
        cmd::note(&format!("WARNING: {warning}"));
        warnings.push(warning);
        return Ok(());
    }
    let package = cmd::root().join(PACKAGE_DIR);
    let mut server = KillOnDrop(
        Command::new("node")
            .arg(package.join("examples/serve.mjs"))
            .arg(&package)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("could not start node examples/serve.mjs")?,
    );
    let stdout = server.0.stdout.take().context("the server's stdout")?;
    let line = BufReader::new(stdout)
        .lines()
        .next()
        .transpose()?
        .unwrap_or_default();
    let port = line
        .strip_prefix("PORT ")
        .context("examples/serve.mjs did not say its port")?;
    let url = format!("http://127.0.0.1:{port}/examples/browser.html");
    let profile = Scratch::new("loomfence-chromium")?;
    let mut chromium = Command::new("chromium");
    chromium.args([
        "--headless",
        // Root in a container has no user namespace for the sandbox.
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        // The machine's network is closed: no background connections.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        // Virtual time: far more than the page needs, free if it is done early.
        "--virtual-time-budget=20000",
        "--dump-dom",
    ]);
    chromium
        .arg(format!("--user-data-dir={}", profile.0.display()))
        .arg(&url);
    cmd::note(&format!("$ {}", cmd::describe(&chromium)));
    // Its stderr is dbus and GPU chatter on a headless machine: shown only
    // when the check fails.
    let output = chromium
        .stdin(Stdio::null())
        .output()
        .context("could not start chromium")?;
    let dom = String::from_utf8_lossy(&output.stdout);
    if dom.contains("<pre id=\"result\">PASS</pre>") {
        cmd::note(&format!("{url}: PASS"));
        return Ok(());
    }
    let verdict = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
    bail!(
        "browser check at {url}: {} (chromium exited {}; the end of its stderr:\n{})",
        verdict.unwrap_or("no #result in the page (did it load?)"),
        output.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )
}

/// Finds Chromium, installing Debian's package when it is missing.
pub(crate) fn ensure_chromium() -> Result<()> {
    let version = || cmd::probe(Command::new("chromium").arg("--version"));
    if version().is_none() {
        cmd::note("chromium not found: installing Debian's package");
        cmd::apt_install("chromium")?;
    }
    cmd::note(&version().context("chromium is installed but does not run")?);
    Ok(())
}

/// The JS suites in `tests/conformance-js`: `node --test` there, against
/// the package just built (its `package.json` depends on
/// `"loomfence": "file:../../wasm/npm"`). A missing folder fails: the
/// suites are part of the pipeline, never skipped.
fn js_suites() -> Result<()> {
    let dir = cmd::root().join(SUITES_DIR);
    if !dir.join("package.json").is_file() {
        bail!("{SUITES_DIR} has no package.json: the JS suites cannot run");
    }
    // With a lockfile, exactly what it locks; without, an install that
    // leaves no lockfile in the work tree.
    let install: &[&str] = if dir.join("package-lock.json").is_file() {
        &["ci"]
    } else {
        &["install", "--no-package-lock"]
    };
    cmd::run(npm(&dir).args(install).args(["--no-audit", "--no-fund"]))?;
    cmd::run(Command::new("node").current_dir(&dir).arg("--test"))
}

/// The package's benchmarks (`wasm/bench`), run small: not timed, only
/// shown to run as the README gives them, so they cannot rot between the
/// runs that measure. `park-resume.js` checks every execution's log itself.
fn benches_run() -> Result<()> {
    let dir = cmd::root().join(BENCH_DIR);
    cmd::run(npm(&dir).args(["ci", "--no-audit", "--no-fund"]))?;
    let node = |script: &str, args: &[&str]| {
        let mut command = Command::new("node");
        command
            .current_dir(&dir)
            .arg(script)
            .args(args)
            .stdout(std::io::stderr());
        command
    };
    cmd::run(&mut node(
        "park-resume.js",
        &[
            "--executions",
            "200",
            "--rounds",
            "1",
            "--concurrency",
            "16",
        ],
    ))?;
    cmd::run(&mut node("per-op.js", &["--executions", "200"]))
}

/// A child process killed when dropped (the static server).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    /// Kills and reaps it; it may have ended already.
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A new, empty folder in the temporary directory, deleted when dropped.
struct Scratch(PathBuf);

impl Scratch {
    /// `<tmp>/<prefix>.<pid>`, emptied first if an earlier run left it.
    fn new(prefix: &str) -> Result<Self> {
        let path = std::env::temp_dir().join(format!("{prefix}.{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).with_context(|| path.display().to_string())?;
        Ok(Self(path))
    }
}

impl Drop for Scratch {
    /// Best effort: a leftover in the temporary directory harms nothing.
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block right after the marker is returned without its fences; no
    /// marker, another language or an open block is an error.
    #[test]
    fn readme_example_is_the_block_after_the_marker() {
        let readme =
            "```js\nnot this\n```\n<!-- npm-example -->\n\n```js\nimport 'x';\nf();\n```\n";
        assert_eq!(
            readme_example(readme).expect("an example"),
            "import 'x';\nf();\n"
        );
        for broken in [
            "# x\n```js\ncode\n```\n",
            "see `<!-- npm-example -->` below\n",
            "\n<!-- npm-example -->\n```rust\nx\n```\n",
            "\n<!-- npm-example -->\n```js\nx\n",
        ] {
            assert!(readme_example(broken).is_err(), "{broken:?}");
        }
        let real = fs::read_to_string(cmd::root().join("README.md")).expect("README.md");
        assert!(readme_example(&real).is_ok());
    }

    /// The entry points import the files the `bindgen` script writes, and
    /// every example the smoke test runs exists.
    #[test]
    fn package_files_match_the_build() {
        let package = cmd::root().join(PACKAGE_DIR);
        let [resume, services] = &MODULES;
        for (entry, module) in [
            ("index.js", resume),
            ("browser.js", resume),
            ("services.js", services),
            ("services-browser.js", services),
        ] {
            let source = fs::read_to_string(package.join(entry)).expect("entry point");
            let stem = module.stem;
            assert!(source.contains(&format!("./dist/{stem}.js")), "{entry}");
            assert!(
                source.contains(&format!("./dist/{stem}_bg.wasm")),
                "{entry}"
            );
        }
        for example in [
            "smoke.mjs",
            "smoke.cjs",
            "types.ts",
            "types.cts",
            "serve.mjs",
        ] {
            assert!(
                package.join("examples").join(example).is_file(),
                "{example}"
            );
        }
        assert_eq!(verdict(7, 7), "met, 0 to spare");
        assert_eq!(verdict(7, 8), "NOT met, 1 over");
    }

    /// The docs quote each module's budget (`150,000 B`): a raise that
    /// forgets them fails here, so no stale figure survives it.
    #[test]
    fn the_docs_quote_the_budgets() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for module in &MODULES {
            let digits = module.budget.to_string();
            let mut quoted = String::new();
            for (i, digit) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    quoted.push(',');
                }
                quoted.push(digit);
            }
            let quoted = format!("{quoted} B");
            for doc in ["wasm/README.md", "docs/decisions.md"] {
                let text = fs::read_to_string(root.join(doc)).expect("doc");
                assert!(
                    text.contains(&quoted),
                    "{doc} does not quote {}'s budget, {quoted}",
                    module.stem
                );
            }
        }
    }
}
