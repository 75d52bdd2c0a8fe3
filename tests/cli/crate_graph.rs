//! The crate graph of ARCHITECTURE.md, checked on the manifests as cargo
//! reads them (`cargo metadata --no-deps`, so that renamed, dotted and
//! target-specific dependencies are seen too, each by its package's
//! name):
//!
//! - a crate of the workspace depends only on the crates of ours that
//!   [`CRATE_GRAPH`] gives it, in every table, dev-dependencies included
//!   (a test of archive built on bench-core would tie the two as surely
//!   as its code); a member the graph does not name, or a crate it names
//!   that is no member, is an error, so that the graph and the workspace
//!   move together;
//! - [`TEST_FIXTURES`] is only ever a dev-dependency (of any crate: the
//!   record's crate too, whose integration tests may use it, though its
//!   unit tests would see a second copy of the record types);
//! - no crate but [`CLI`] depends on a crate of [`CLI_ONLY`], in any
//!   table;
//! - [`RECORD_CRATE`] depends on [`RECORD_DEPENDENCIES`] only, and
//!   bench-core on nothing of [`NOT_FOR_BENCH_CORE`] (dev-dependencies
//!   aside: what a test uses is not the library's).

use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::Path;

/// The command-line tool, the one crate that wires the others together.
pub const CLI: &str = "netbisect";

/// The crate every test may build its records and repositories with.
pub const TEST_FIXTURES: &str = "test-fixtures";

/// The crate of the record, below every other.
pub const RECORD_CRATE: &str = "run-record";

/// Each crate of the workspace and the crates of ours it may depend on,
/// in any table ([`TEST_FIXTURES`] as a dev-dependency aside, which every
/// crate may have).
pub const CRATE_GRAPH: &[(&str, &[&str])] = &[
    // The record and what describes a run: on nothing of ours, so that
    // the archive and bisect read records without the code that
    // measures them.
    (RECORD_CRATE, &[]),
    // Children and signals: below everything that runs a child.
    ("child-process", &[]),
    // bench-core, archive and bisect on the record, never on each other;
    // bench-core's settings and bisect's commands end with a signal.
    ("bench-core", &[RECORD_CRATE, "child-process"]),
    ("archive", &[RECORD_CRATE]),
    ("bisect", &[RECORD_CRATE, "child-process"]),
    (TEST_FIXTURES, &[RECORD_CRATE]),
    (
        CLI,
        &[
            RECORD_CRATE,
            "child-process",
            "bench-core",
            "archive",
            "bisect",
        ],
    ),
];

/// What only the command-line tool knows: its arguments, its templates,
/// its errors for people and its progress bars.
pub const CLI_ONLY: &[&str] = &[
    "anyhow",
    "clap",
    "clap_complete",
    "clap_mangen",
    "indicatif",
    "minijinja",
];

/// Every crate the record's crate may depend on: no socket, no system
/// call beyond the clock (std's), no network crate.
pub const RECORD_DEPENDENCIES: &[&str] =
    &["blake3", "serde", "serde_jcs", "serde_json", "thiserror"];

/// What bench-core knows nothing of: SQLite, PostgreSQL and git
/// (templates are the CLI's, [`CLI_ONLY`]).
pub const NOT_FOR_BENCH_CORE: &[&str] = &["git2", "postgres", "rusqlite"];

/// A package of `cargo metadata`, with what this check reads of it.
#[derive(Debug, Deserialize)]
pub struct Package {
    name: String,
    dependencies: Vec<Dependency>,
}

/// A dependency of a package: the package depended on (its real name,
/// also when renamed) and its table (`None` for `[dependencies]`, `dev`,
/// `build`).
#[derive(Debug, Deserialize)]
struct Dependency {
    name: String,
    kind: Option<String>,
}

impl Dependency {
    fn is_dev(&self) -> bool {
        self.kind.as_deref() == Some("dev")
    }

    /// The table it is written in, as a manifest names it.
    fn table(&self) -> String {
        match &self.kind {
            None => "dependencies".to_string(),
            Some(kind) => format!("{kind}-dependencies"),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

/// The crates of ours `name` may depend on; `None` when the graph does
/// not name it.
fn allowed_of(name: &str) -> Option<&'static [&'static str]> {
    CRATE_GRAPH
        .iter()
        .find(|(krate, _)| *krate == name)
        .map(|(_, allowed)| *allowed)
}

/// Why `package` may not depend on `dependency`; `None` when it may.
fn why_forbidden(
    package: &str,
    dependency: &Dependency,
    ours: &BTreeSet<&str>,
    allowed: &[&str],
) -> Option<&'static str> {
    let name = dependency.name.as_str();
    if name == TEST_FIXTURES {
        return (!dependency.is_dev()).then_some("test-fixtures is only ever a dev-dependency");
    }
    if ours.contains(name) {
        return (!allowed.contains(&name)).then_some("not an arrow of the crate graph");
    }
    if package != CLI && CLI_ONLY.contains(&name) {
        return Some("only the CLI knows clap, minijinja, anyhow and progress bars");
    }
    if dependency.is_dev() {
        return None;
    }
    if package == RECORD_CRATE && !RECORD_DEPENDENCIES.contains(&name) {
        return Some(
            "run-record depends on serde, serde_json, serde_jcs, blake3 and thiserror only",
        );
    }
    if package == "bench-core" && NOT_FOR_BENCH_CORE.contains(&name) {
        return Some("bench-core knows nothing of SQLite, PostgreSQL or git");
    }
    None
}

/// Every dependency of the workspace's `packages` that the rules of this
/// module forbid, and every crate the graph and the workspace do not
/// agree on, as `FROM -> TO (TABLE): WHY`.
pub fn crate_graph_problems(packages: &[Package]) -> Vec<String> {
    let ours: BTreeSet<&str> = packages
        .iter()
        .map(|package| package.name.as_str())
        .collect();
    let mut problems = Vec::new();
    for (krate, _) in CRATE_GRAPH {
        if !ours.contains(krate) {
            problems.push(format!(
                "{krate}: in the crate graph but not a member of the workspace"
            ));
        }
    }
    for package in packages {
        let Some(allowed) = allowed_of(&package.name) else {
            problems.push(format!(
                "{}: a member the crate graph does not name; give it its place \
                 (CRATE_GRAPH here, and ARCHITECTURE.md)",
                package.name
            ));
            continue;
        };
        for dependency in &package.dependencies {
            if let Some(why) = why_forbidden(&package.name, dependency, &ours, allowed) {
                problems.push(format!(
                    "{} -> {} ({}): {why}",
                    package.name,
                    dependency.name,
                    dependency.table()
                ));
            }
        }
    }
    problems
}

/// The packages of the workspace at `root`, as `cargo metadata` reads
/// its manifests (without resolving anything, so offline).
fn workspace_packages(root: &Path) -> Vec<Package> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Metadata = serde_json::from_slice(&output.stdout).unwrap();
    metadata.packages
}

#[test]
fn the_workspace_keeps_its_crate_graph() {
    let packages = workspace_packages(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        packages.iter().any(|package| package.name == CLI),
        "{packages:?}"
    );
    let problems = crate_graph_problems(&packages);
    assert!(
        problems.is_empty(),
        "dependencies the crate graph of ARCHITECTURE.md does not allow:\n{}",
        problems.join("\n")
    );
}

/// Dependencies of a package made for a test: each a name and its
/// table's kind (`None`, `Some("dev")`, `Some("build")`).
type Dependencies<'a> = &'a [(&'a str, Option<&'a str>)];

/// A package named `name` with `dependencies`.
fn package(name: &str, dependencies: Dependencies) -> Package {
    Package {
        name: name.to_string(),
        dependencies: dependencies
            .iter()
            .map(|(name, kind)| Dependency {
                name: name.to_string(),
                kind: kind.map(str::to_string),
            })
            .collect(),
    }
}

/// The graph as ARCHITECTURE.md draws it, with the dependencies the
/// rules allow: `extra` is added to the crate of that name.
fn workspace_with(extra: (&str, Dependencies)) -> Vec<Package> {
    let dev = Some("dev");
    let mut packages = vec![
        package(RECORD_CRATE, &[("serde", None), ("blake3", None)]),
        package("child-process", &[("signal-hook", None), ("tempfile", dev)]),
        package(
            "bench-core",
            &[
                (RECORD_CRATE, None),
                ("child-process", None),
                ("libc", None),
            ],
        ),
        package(
            "archive",
            &[
                (RECORD_CRATE, None),
                ("rusqlite", None),
                (TEST_FIXTURES, dev),
            ],
        ),
        package(
            "bisect",
            &[
                (RECORD_CRATE, None),
                ("child-process", None),
                ("git2", None),
            ],
        ),
        package(TEST_FIXTURES, &[(RECORD_CRATE, None), ("git2", None)]),
        package(
            CLI,
            &[
                ("archive", None),
                ("bench-core", None),
                ("clap", None),
                ("minijinja", None),
                ("anyhow", None),
                (TEST_FIXTURES, dev),
            ],
        ),
    ];
    let (name, dependencies) = extra;
    match packages.iter_mut().find(|package| package.name == name) {
        Some(found) => found
            .dependencies
            .extend(package(name, dependencies).dependencies),
        None => packages.push(package(name, dependencies)),
    }
    packages
}

#[test]
fn the_graph_as_drawn_passes() {
    assert_eq!(
        crate_graph_problems(&workspace_with(("bisect", &[]))),
        Vec::<String>::new()
    );
    // Every crate may build its tests on test-fixtures.
    for krate in [RECORD_CRATE, "bench-core"] {
        assert_eq!(
            crate_graph_problems(&workspace_with((krate, &[(TEST_FIXTURES, Some("dev"))]))),
            Vec::<String>::new()
        );
    }
}

#[test]
fn a_forbidden_dependency_is_named_with_its_table_and_why() {
    let dev = Some("dev");
    let build = Some("build");
    let cases: &[(&str, Dependencies, &str)] = &[
        (
            "archive",
            &[("bench-core", None)],
            "archive -> bench-core (dependencies): not an arrow of the crate graph",
        ),
        (
            "bench-core",
            &[("bisect", dev)],
            "bench-core -> bisect (dev-dependencies): not an arrow of the crate graph",
        ),
        (
            RECORD_CRATE,
            &[("child-process", build)],
            "run-record -> child-process (build-dependencies): not an arrow of the crate graph",
        ),
        (
            "bisect",
            &[(TEST_FIXTURES, None)],
            "bisect -> test-fixtures (dependencies): test-fixtures is only ever a dev-dependency",
        ),
        (
            RECORD_CRATE,
            &[(TEST_FIXTURES, build)],
            "run-record -> test-fixtures (build-dependencies): test-fixtures is only ever a \
             dev-dependency",
        ),
        (
            "archive",
            &[("anyhow", None)],
            "archive -> anyhow (dependencies): only the CLI knows clap, minijinja, anyhow and \
             progress bars",
        ),
        (
            TEST_FIXTURES,
            &[("clap", dev)],
            "test-fixtures -> clap (dev-dependencies): only the CLI knows clap, minijinja, \
             anyhow and progress bars",
        ),
        (
            RECORD_CRATE,
            &[("libc", None)],
            "run-record -> libc (dependencies): run-record depends on serde, serde_json, \
             serde_jcs, blake3 and thiserror only",
        ),
        (
            "bench-core",
            &[("rusqlite", None)],
            "bench-core -> rusqlite (dependencies): bench-core knows nothing of SQLite, \
             PostgreSQL or git",
        ),
        (
            "spool",
            &[(RECORD_CRATE, None)],
            "spool: a member the crate graph does not name; give it its place (CRATE_GRAPH \
             here, and ARCHITECTURE.md)",
        ),
    ];
    for (krate, dependencies, expected) in cases {
        assert_eq!(
            crate_graph_problems(&workspace_with((krate, dependencies))),
            [*expected],
            "{krate} -> {dependencies:?}"
        );
    }
    // A test's own use of a crate the library may not have is its own.
    assert_eq!(
        crate_graph_problems(&workspace_with((RECORD_CRATE, &[("tempfile", dev)]))),
        Vec::<String>::new()
    );
}

#[test]
fn a_crate_of_the_graph_that_is_no_member_is_named() {
    let packages: Vec<Package> = workspace_with(("bisect", &[]))
        .into_iter()
        .filter(|package| package.name != "bisect")
        .collect();
    assert_eq!(
        crate_graph_problems(&packages),
        ["bisect: in the crate graph but not a member of the workspace"]
    );
}
