//! The layout rules of the workspace, checked on its own sources:
//!
//! - no module of a crate imports another module of the same crate that
//!   imports it back, directly or through a longer circle;
//! - no non-test source file of a library crate or of `src/` is over
//!   [`MAX_LINES`] lines, unless its first comment carries
//!   [`KEPT_WHOLE_MARKER`] and says why it is one cohesive thing;
//! - no subcommand's module (`commands::X` of the root package) imports
//!   another subcommand's module: what they share lives beside
//!   `commands/`;
//! - no module of the root package but those of [`CLAP_TYPES_END_IN`] (and
//!   `main.rs`) imports `cli`, the clap types;
//! - no crate but [`PROCESS_CRATE`] installs a signal handler or depends
//!   on signal-hook.
//!
//! The crates are found from the workspace's member list in the root
//! Cargo.toml (plus the root package), and their modules from their `mod`
//! declarations, starting at `src/lib.rs` or `src/main.rs`. An import is a
//! path that starts with `crate::` or `super::`, in `use` trees too
//! (`use crate::{a, b::c}`), outside comments and string literals; the
//! module it names is the longest prefix of the path that is a module. A
//! module and its own submodules are one unit (a parent declares its
//! children, a child may use its parent's items), so only imports between
//! modules neither of which contains the other count. Whatever an item
//! marked `#[cfg(test)]` holds (the `tests` module, test-only helpers and
//! module files) counts for neither rule.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Longest a source file may be without [`KEPT_WHOLE_MARKER`].
pub const MAX_LINES: usize = 600;

/// What the first comment of a longer file says, followed by why it is
/// one cohesive thing.
pub const KEPT_WHOLE_MARKER: &str = "Kept whole:";

/// The modules of the root package that may name the clap types of
/// `cli`: `cli` itself, the subcommands' entry points, and `request`,
/// which turns bench's arguments into a validated request. The others
/// take plain values (the global options, a request, a layout).
pub const CLAP_TYPES_END_IN: &[&str] = &["cli", "commands", "request"];

/// The one crate that handles signals.
pub const PROCESS_CRATE: &str = "child-process";

/// A crate of the workspace: its package name and its `src/` directory;
/// `sizes_checked` for a library crate and the root package.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Crate {
    name: String,
    src: PathBuf,
    sizes_checked: bool,
}

/// The `name` of the `[package]` table of a Cargo.toml.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_string());
        }
    }
    None
}

/// The members listed in `[workspace] members = [...]` of a Cargo.toml.
fn workspace_members(manifest: &str) -> Vec<String> {
    let mut in_workspace = false;
    let mut members = Vec::new();
    let mut lines = manifest.lines();
    while let Some(line) = lines.next() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_workspace = line == "[workspace]";
            continue;
        }
        let Some(value) = line
            .strip_prefix("members")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
        else {
            continue;
        };
        if !in_workspace {
            continue;
        }
        // The array may run over several lines, up to its `]`.
        let mut array = value.to_string();
        while !array.contains(']') {
            let next = lines.next().expect("members array closed by `]`");
            array.push_str(next.split('#').next().unwrap_or(""));
        }
        for item in array.split(['[', ']', ',']) {
            let item = item.trim();
            if let Some(name) = item.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                assert!(
                    !name.contains(['*', '?']),
                    "member globs are not supported: {name}"
                );
                members.push(name.to_string());
            }
        }
    }
    members
}

/// Every crate of the workspace at `root`: its members, then the root
/// package when the root manifest has one.
fn workspace_crates(root: &Path) -> Vec<Crate> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = workspace_members(&manifest);
    assert!(!members.is_empty(), "no workspace members in {root:?}");
    let mut crates = Vec::new();
    for member in members {
        let dir = root.join(&member);
        let member_manifest = fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap_or_else(|error| panic!("member {member}: {error}"));
        crates.push(Crate {
            name: package_name(&member_manifest).unwrap_or(member),
            sizes_checked: dir.join("src/lib.rs").is_file(),
            src: dir.join("src"),
        });
    }
    if let Some(name) = package_name(&manifest) {
        crates.push(Crate {
            name,
            // The binary's src/ is held to the same size rule as the
            // libraries.
            sizes_checked: true,
            src: root.join("src"),
        });
    }
    crates
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A number or anything else that is neither a name nor punctuation.
    Other,
}

/// The tokens of Rust source with their line numbers, without comments,
/// string and character literals, lifetimes and numbers' contents.
fn lex(source: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    // Skips a quoted literal whose opening `"` is at `i` (after `hashes`
    // `#`s for a raw one) and returns the index after it.
    let skip_string = |mut i: usize, raw_hashes: Option<usize>, line: &mut usize| -> usize {
        i += 1;
        while i < chars.len() {
            match chars[i] {
                '\n' => *line += 1,
                '\\' if raw_hashes.is_none() => {
                    if at(i + 1) == '\n' {
                        *line += 1;
                    }
                    i += 1;
                }
                '"' => {
                    let hashes = raw_hashes.unwrap_or(0);
                    if (1..=hashes).all(|k| at(i + k) == '#') {
                        return i + 1 + hashes;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        i
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(i, None, &mut line);
        } else if c == '\'' {
            if at(i + 1) == '\\' {
                // An escaped character literal: past the escaped
                // character, up to the closing quote.
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or label: its name follows as an identifier.
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let prefix_of_literal = matches!(word.as_str(), "r" | "br" | "cr");
            if prefix_of_literal && (at(i) == '"' || at(i) == '#') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i = skip_string(i + hashes, Some(hashes), &mut line);
                    continue;
                }
                if hashes == 1 && word == "r" {
                    // A raw identifier, r#name: the name follows.
                    i += 1;
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = skip_string(i, None, &mut line);
                continue;
            }
            if word == "b" && at(i) == '\'' {
                continue;
            }
            tokens.push((Token::Ident(word), line));
        } else if c.is_ascii_digit() {
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            tokens.push((Token::Other, line));
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push((Token::PathSep, line));
            i += 2;
        } else {
            tokens.push((Token::Punct(c), line));
            i += 1;
        }
    }
    tokens
}

/// What one source file declares and imports, outside `#[cfg(test)]`.
#[derive(Debug, Default, PartialEq, Eq)]
struct FileAnalysis {
    /// Modules declared with `mod NAME;`, as paths from the crate root.
    child_modules: Vec<Vec<String>>,
    /// Paths from the crate root that the file names, with their lines.
    imports: Vec<(Vec<String>, usize)>,
}

fn ident(tokens: &[(Token, usize)], index: usize) -> Option<&str> {
    match tokens.get(index) {
        Some((Token::Ident(name), _)) => Some(name),
        _ => None,
    }
}

fn punct(tokens: &[(Token, usize)], index: usize, expected: char) -> bool {
    tokens.get(index).map(|(token, _)| token) == Some(&Token::Punct(expected))
}

fn is_path_sep(tokens: &[(Token, usize)], index: usize) -> bool {
    tokens.get(index).map(|(token, _)| token) == Some(&Token::PathSep)
}

/// The number of tokens of an attribute `#[cfg(test)]` (or `#![cfg(test)]`
/// when `inner`) at `index`, if there is one.
fn cfg_test_at(tokens: &[(Token, usize)], index: usize, inner: bool) -> Option<usize> {
    let mut k = index;
    if !punct(tokens, k, '#') {
        return None;
    }
    k += 1;
    if inner {
        if !punct(tokens, k, '!') {
            return None;
        }
        k += 1;
    }
    let matches = punct(tokens, k, '[')
        && ident(tokens, k + 1) == Some("cfg")
        && punct(tokens, k + 2, '(')
        && ident(tokens, k + 3) == Some("test")
        && punct(tokens, k + 4, ')')
        && punct(tokens, k + 5, ']');
    matches.then_some(k + 6 - index)
}

/// The index after the item (or statement) that starts at `index`, its
/// outer attributes included: after its `;` or its body's `}`.
fn skip_item(tokens: &[(Token, usize)], mut index: usize) -> usize {
    let mut depth = 0usize;
    while index < tokens.len() {
        let token = &tokens[index].0;
        index += 1;
        match token {
            Token::Punct('{' | '(' | '[') => depth += 1,
            Token::Punct(close @ ('}' | ')' | ']')) => {
                depth = depth.saturating_sub(1);
                if depth == 0 && *close == '}' {
                    return index;
                }
            }
            Token::Punct(';') if depth == 0 => return index,
            _ => {}
        }
    }
    index
}

/// The index of the `}` that closes the block `index` is in.
fn skip_rest_of_block(tokens: &[(Token, usize)], mut index: usize) -> usize {
    let mut depth = 1usize;
    while index < tokens.len() {
        match tokens[index].0 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    // Leaves the closing brace to the caller's count.
                    return index;
                }
            }
            _ => {}
        }
        index += 1;
    }
    index
}

/// The paths of a use tree (or a plain path) that starts at `index` below
/// `prefix`, and the index after it.
fn use_tree(
    tokens: &[(Token, usize)],
    mut index: usize,
    prefix: Vec<String>,
) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        match tokens.get(index).map(|(token, _)| token) {
            Some(Token::Ident(name)) => {
                if name != "self" {
                    path.push(name.clone());
                }
                index += 1;
                if is_path_sep(tokens, index) {
                    index += 1;
                    continue;
                }
                if ident(tokens, index) == Some("as") {
                    index += 2;
                }
                return (vec![path], index);
            }
            Some(Token::Punct('*')) => return (vec![path], index + 1),
            Some(Token::Punct('{')) => {
                index += 1;
                let mut paths = Vec::new();
                while index < tokens.len() && !punct(tokens, index, '}') {
                    let (inner, next) = use_tree(tokens, index, path.clone());
                    paths.extend(inner);
                    index = next;
                    if punct(tokens, index, ',') {
                        index += 1;
                    } else if !punct(tokens, index, '}') {
                        // Not a use tree after all: stop at what is left.
                        return (paths, index);
                    }
                }
                return (paths, index + 1);
            }
            _ => return (vec![path], index),
        }
    }
}

/// What `source`, the file of the module at `module` (a path from the
/// crate root), declares and imports outside `#[cfg(test)]` items.
fn analyse(source: &str, module: &[String]) -> FileAnalysis {
    let tokens = lex(source);
    let mut analysis = FileAnalysis::default();
    // Inline modules (`mod name { ... }`) open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut index = 0;
    let current = |inline: &[(String, usize)]| -> Vec<String> {
        let mut path = module.to_vec();
        path.extend(inline.iter().map(|(name, _)| name.clone()));
        path
    };
    while index < tokens.len() {
        if let Some(length) = cfg_test_at(&tokens, index, false) {
            index = skip_item(&tokens, index + length);
            continue;
        }
        if let Some(length) = cfg_test_at(&tokens, index, true) {
            index = if depth == 0 {
                tokens.len()
            } else {
                skip_rest_of_block(&tokens, index + length)
            };
            continue;
        }
        let previous_is_dollar = index > 0 && punct(&tokens, index - 1, '$');
        let previous_is_sep = index > 0 && is_path_sep(&tokens, index - 1);
        match &tokens[index].0 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, open)| *open == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let Some(name) = ident(&tokens, index + 1) {
                    if punct(&tokens, index + 2, ';') {
                        let mut path = current(&inline);
                        path.push(name.to_string());
                        analysis.child_modules.push(path);
                    } else if punct(&tokens, index + 2, '{') {
                        inline.push((name.to_string(), depth));
                        depth += 1;
                        index += 3;
                        continue;
                    }
                }
            }
            Token::Ident(word)
                if word == "crate"
                    && !previous_is_dollar
                    && !previous_is_sep
                    && is_path_sep(&tokens, index + 1) =>
            {
                let line = tokens[index].1;
                let (paths, next) = use_tree(&tokens, index + 2, Vec::new());
                analysis
                    .imports
                    .extend(paths.into_iter().map(|path| (path, line)));
                index = next;
                continue;
            }
            Token::Ident(word)
                if word == "super" && !previous_is_sep && is_path_sep(&tokens, index + 1) =>
            {
                let line = tokens[index].1;
                let mut base = current(&inline);
                let mut next = index;
                while ident(&tokens, next) == Some("super") && is_path_sep(&tokens, next + 1) {
                    base.pop();
                    next += 2;
                }
                let (paths, next) = use_tree(&tokens, next, base);
                analysis
                    .imports
                    .extend(paths.into_iter().map(|path| (path, line)));
                index = next;
                continue;
            }
            _ => {}
        }
        index += 1;
    }
    analysis
}

/// A module of a crate, from its own file.
#[derive(Debug)]
struct Module {
    path: Vec<String>,
    file: PathBuf,
    source: String,
    analysis: FileAnalysis,
}

/// The modules of the crate whose sources are in `src`, found from its
/// `mod` declarations; files declared only under `#[cfg(test)]` are left
/// out.
fn crate_modules(src: &Path) -> Vec<Module> {
    let root_file = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .find(|file| file.is_file())
        .unwrap_or_else(|| panic!("no lib.rs or main.rs in {src:?}"));
    let mut modules = Vec::new();
    // (module path, its file, the directory of its children's files)
    let mut pending = vec![(Vec::new(), root_file, src.to_path_buf())];
    while let Some((path, file, children_dir)) = pending.pop() {
        let source = fs::read_to_string(&file).unwrap();
        let analysis = analyse(&source, &path);
        for child in &analysis.child_modules {
            let (name, between) = child[path.len()..].split_last().unwrap();
            let dir = between
                .iter()
                .fold(children_dir.clone(), |dir, inline| dir.join(inline));
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(name).join("mod.rs");
            let (child_file, child_dir) = if flat.is_file() {
                (flat, dir.join(name))
            } else if nested.is_file() {
                (nested, dir.join(name))
            } else {
                panic!("{file:?} declares module {name}, which has no file");
            };
            pending.push((child.clone(), child_file, child_dir));
        }
        modules.push(Module {
            path,
            file,
            source,
            analysis,
        });
    }
    modules.sort_by(|a, b| a.path.cmp(&b.path));
    modules
}

fn module_name(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_string()
    } else {
        path.join("::")
    }
}

/// The imports between modules: for each importing module, the modules it
/// imports (neither an ancestor nor a descendant of it) and the line of
/// the first import of each.
fn import_graph(modules: &[Module]) -> BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>> {
    let known: BTreeSet<&Vec<String>> = modules.iter().map(|module| &module.path).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>> = BTreeMap::new();
    for module in modules {
        let edges = graph.entry(module.path.clone()).or_default();
        for (import, line) in &module.analysis.imports {
            let Some(target) = (0..=import.len())
                .rev()
                .map(|length| import[..length].to_vec())
                .find(|prefix| known.contains(prefix))
            else {
                continue;
            };
            if target.starts_with(&module.path) || module.path.starts_with(&target) {
                continue;
            }
            edges.entry(target).or_insert(*line);
        }
    }
    graph
}

/// The groups of nodes of `graph` that reach each other (Tarjan's strongly
/// connected components), only those of more than one node, each sorted.
fn circles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeMap<N, usize>>) -> Vec<Vec<N>> {
    struct State<N> {
        next_index: usize,
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(
        node: &N,
        graph: &BTreeMap<N, BTreeMap<N, usize>>,
        state: &mut State<N>,
    ) {
        state.index.insert(node.clone(), state.next_index);
        state.low.insert(node.clone(), state.next_index);
        state.next_index += 1;
        state.stack.push(node.clone());
        state.on_stack.insert(node.clone());
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            if !state.index.contains_key(next) {
                visit(next, graph, state);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node.clone(), low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node.clone(), low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            loop {
                let member = state.stack.pop().unwrap();
                state.on_stack.remove(&member);
                let done = &member == node;
                component.push(member);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        next_index: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(node, graph, &mut state);
        }
    }
    state.found.sort();
    state.found
}

/// Every circle of imports in every crate of the workspace at `root`, one
/// message each naming its modules and the imports that close it.
pub fn module_circles(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in workspace_crates(root) {
        let modules = crate_modules(&krate.src);
        let graph = import_graph(&modules);
        for circle in circles(&graph) {
            let names: Vec<String> = circle.iter().map(|path| module_name(path)).collect();
            let mut message = format!(
                "{}: modules {} import each other:",
                krate.name,
                names.join(", ")
            );
            for from in &circle {
                let file = &modules
                    .iter()
                    .find(|module| &module.path == from)
                    .unwrap()
                    .file;
                let file = file.strip_prefix(root).unwrap_or(file).display();
                for (to, line) in &graph[from] {
                    if circle.contains(to) {
                        message.push_str(&format!(
                            "\n    {} -> {} ({file}:{line})",
                            module_name(from),
                            module_name(to)
                        ));
                    }
                }
            }
            problems.push(message);
        }
    }
    problems
}

/// Every import of one subcommand's module by another's in the root
/// package (`commands::X` importing `commands::Y`, or anything inside
/// them), with its file and line.
pub fn subcommand_imports(root: &Path) -> Vec<String> {
    let Some(krate) = workspace_crates(root)
        .into_iter()
        .find(|krate| krate.src == root.join("src"))
    else {
        return Vec::new();
    };
    let modules = crate_modules(&krate.src);
    let graph = import_graph(&modules);
    let subcommand =
        |path: &[String]| (path.len() >= 2 && path[0] == "commands").then(|| path[1].clone());
    let mut problems = Vec::new();
    for (from, edges) in &graph {
        let Some(importer) = subcommand(from) else {
            continue;
        };
        for (to, line) in edges {
            if subcommand(to).is_some_and(|imported| imported != importer) {
                let file = &modules
                    .iter()
                    .find(|module| &module.path == from)
                    .unwrap()
                    .file;
                let file = file.strip_prefix(root).unwrap_or(file).display();
                problems.push(format!(
                    "{} imports {} ({file}:{line})",
                    module_name(from),
                    module_name(to)
                ));
            }
        }
    }
    problems
}

/// Imports of `cli` from a module of the root package outside
/// [`CLAP_TYPES_END_IN`] (the crate root, `main.rs`, is an ancestor of
/// every module, so its imports do not count).
pub fn clap_type_imports(root: &Path) -> Vec<String> {
    let modules = crate_modules(&root.join("src"));
    let graph = import_graph(&modules);
    let mut problems = Vec::new();
    for (from, edges) in &graph {
        if from
            .first()
            .is_some_and(|top| CLAP_TYPES_END_IN.contains(&top.as_str()))
        {
            continue;
        }
        for (to, line) in edges {
            if to.first().map(String::as_str) == Some("cli") {
                let file = &modules
                    .iter()
                    .find(|module| &module.path == from)
                    .unwrap()
                    .file;
                let file = file.strip_prefix(root).unwrap_or(file).display();
                problems.push(format!(
                    "{} imports {} ({file}:{line})",
                    module_name(from),
                    module_name(to)
                ));
            }
        }
    }
    problems
}

/// Names that install or change a signal's handler.
const SIGNAL_HANDLER_NAMES: &[&str] = &["sigaction", "signal_hook", "sigprocmask", "sighandler_t"];

/// True when a Cargo.toml's dependency tables name signal-hook.
fn depends_on_signal_hook(manifest: &str) -> bool {
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_dependencies = line.ends_with("dependencies]") && !line.starts_with("[workspace");
        } else if in_dependencies && line.starts_with("signal-hook") {
            return true;
        }
    }
    false
}

/// Every place outside [`PROCESS_CRATE`] that installs a signal handler
/// (a name of [`SIGNAL_HANDLER_NAMES`] or `libc::signal` in non-test code)
/// or depends on signal-hook.
pub fn signal_handlers_outside_the_process_crate(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in workspace_crates(root) {
        if krate.name == PROCESS_CRATE {
            continue;
        }
        let manifest_path = krate.src.parent().unwrap().join("Cargo.toml");
        let manifest = fs::read_to_string(&manifest_path).unwrap();
        if depends_on_signal_hook(&manifest) {
            let file = manifest_path.strip_prefix(root).unwrap_or(&manifest_path);
            problems.push(format!("{}: depends on signal-hook", file.display()));
        }
        for module in crate_modules(&krate.src) {
            let tokens = lex(&module.source);
            for (index, (token, line)) in tokens.iter().enumerate() {
                let Token::Ident(name) = token else {
                    continue;
                };
                let libc_signal = name == "libc"
                    && is_path_sep(&tokens, index + 1)
                    && ident(&tokens, index + 2) == Some("signal");
                if SIGNAL_HANDLER_NAMES.contains(&name.as_str()) || libc_signal {
                    let file = module.file.strip_prefix(root).unwrap_or(&module.file);
                    problems.push(format!(
                        "{}:{line}: installs a signal handler ({name})",
                        file.display()
                    ));
                }
            }
        }
    }
    problems
}

/// True when the first comment of `source` (its leading lines that start
/// with `//`) carries [`KEPT_WHOLE_MARKER`].
fn first_comment_keeps_whole(source: &str) -> bool {
    source
        .lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty())
        .take_while(|line| line.starts_with("//"))
        .any(|line| line.contains(KEPT_WHOLE_MARKER))
}

/// Every non-test source file of a library crate or of the root package's
/// `src/` that is over [`MAX_LINES`] lines without [`KEPT_WHOLE_MARKER`].
pub fn oversized_files(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for krate in workspace_crates(root) {
        if !krate.sizes_checked {
            continue;
        }
        for module in crate_modules(&krate.src) {
            let n_lines = module.source.lines().count();
            if n_lines > MAX_LINES && !first_comment_keeps_whole(&module.source) {
                let file = module.file.strip_prefix(root).unwrap_or(&module.file);
                problems.push(format!("{}: {n_lines} lines", file.display()));
            }
        }
    }
    problems.sort();
    problems
}

/// True when a Cargo.toml's `[lints]` table says `workspace = true`.
fn takes_workspace_lints(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && line.replace(' ', "") == "workspace=true" {
            return true;
        }
    }
    false
}

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let problems = module_circles(workspace_root());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_subcommand_imports_another() {
    let problems = subcommand_imports(workspace_root());
    assert!(
        problems.is_empty(),
        "a subcommand's module imports another's; move what they share beside \
         src/commands/:\n{}",
        problems.join("\n")
    );
}

#[test]
fn clap_types_stay_in_the_command_line() {
    let problems = clap_type_imports(workspace_root());
    assert!(
        problems.is_empty(),
        "a module beside commands/ names a clap type of cli; give it a plain value \
         that the command builds from its arguments:\n{}",
        problems.join("\n")
    );
}

#[test]
fn only_the_process_crate_handles_signals() {
    let problems = signal_handlers_outside_the_process_crate(workspace_root());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_source_file_over_the_limit_unless_kept_whole() {
    let problems = oversized_files(workspace_root());
    assert!(
        problems.is_empty(),
        "over {MAX_LINES} lines (tests in the file included; a test module in a \
         file of its own does not count), without \"{KEPT_WHOLE_MARKER}\" in \
         the first comment:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_crate_takes_the_workspace_lints() {
    let root = workspace_root();
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(takes_workspace_lints(&manifest), "the root package");
    for member in workspace_members(&manifest) {
        let manifest = fs::read_to_string(root.join(&member).join("Cargo.toml")).unwrap();
        assert!(
            takes_workspace_lints(&manifest),
            "{member}/Cargo.toml has no [lints] workspace = true"
        );
    }
    assert!(!takes_workspace_lints(
        "[package]\nworkspace = true\n[lints]\n[dependencies]\nworkspace = true\n"
    ));
}

#[test]
fn the_workspace_members_are_all_found() {
    let names: Vec<String> = workspace_crates(workspace_root())
        .into_iter()
        .map(|krate| krate.name)
        .collect();
    for expected in ["bench-core", "archive", "bisect", "netbisect"] {
        assert!(names.iter().any(|name| name == expected), "{names:?}");
    }
}

fn path(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split("::").map(str::to_string).collect()
}

fn imports_of(source: &str, module: &str) -> Vec<String> {
    analyse(source, &path(module))
        .imports
        .into_iter()
        .map(|(path, _)| path.join("::"))
        .collect()
}

#[test]
fn use_trees_are_expanded_from_the_crate_root() {
    let source = "use crate::{a, b::c, d::{e, f::*}, g as h, self};\n\
                  use crate::x::y::Z;\n\
                  fn main() { crate::m::run(); let _ = crate::n::N { v: 1 }; }\n";
    assert_eq!(
        imports_of(source, "top"),
        [
            "a", "b::c", "d::e", "d::f", "g", "", "x::y::Z", "m::run", "n::N"
        ]
    );
}

#[test]
fn super_paths_are_resolved_from_the_module() {
    let source = "use super::sibling::Thing;\n\
                  use super::{other, third::Item};\n\
                  use super::super::far::Away;\n\
                  fn f() { super::helper(); }\n";
    assert_eq!(
        imports_of(source, "outer::inner::here"),
        [
            "outer::inner::sibling::Thing",
            "outer::inner::other",
            "outer::inner::third::Item",
            "outer::far::Away",
            "outer::inner::helper",
        ]
    );
    // In an inline module, super is the file's module.
    let source = "mod private { use super::Shared; use super::super::up; }\n";
    assert_eq!(imports_of(source, "a::b"), ["a::b::Shared", "a::up"]);
}

#[test]
fn comments_strings_macros_and_test_items_are_not_imports() {
    let source = r####"
        //! See [`crate::doc_link`] and `super::prose`.
        /* crate::block /* nested crate::comment */ still crate::comment */
        const TEXT: &str = "crate::in_string \" crate::after_escape";
        const RAW: &str = r#"crate::in_raw "quoted" crate::still"#;
        const BYTES: &[u8] = b"crate::bytes";
        const QUOTE: char = '"';
        const ESCAPED: char = '\'';
        fn lifetime<'a>(x: &'a str) -> &'a str { x }
        macro_rules! m { () => { $crate::macro_path() }; }
        pub(crate) fn visible() {}
        #[cfg(test)]
        use crate::test_only_use;
        #[cfg(test)]
        #[expect(dead_code)]
        fn helper() { crate::test_only_call(); }
        #[cfg(test)]
        mod tests {
            use super::*;
            use crate::tested::Thing;
        }
        use crate::counted;
    "####;
    assert_eq!(imports_of(source, "m"), ["counted"]);
    let analysis = analyse("#![cfg(test)]\nuse crate::all_test;\n", &path("m"));
    assert!(analysis.imports.is_empty());
}

#[test]
fn module_declarations_outside_tests_are_children() {
    let source = "pub mod public;\nmod private;\n#[cfg(test)]\nmod tests;\n\
                  mod inline { pub mod deeper; }\n";
    let children: Vec<String> = analyse(source, &path("top"))
        .child_modules
        .into_iter()
        .map(|child| child.join("::"))
        .collect();
    assert_eq!(
        children,
        ["top::public", "top::private", "top::inline::deeper"]
    );
}

#[test]
fn members_are_read_from_the_workspace_table_only() {
    let manifest = "[package]\nmembers = [\"not-this\"]\n\n\
                    [workspace]\nmembers = [\n    \"one\", # a comment\n    \"two\",\n]\n\
                    resolver = \"3\"\n";
    assert_eq!(workspace_members(manifest), ["one", "two"]);
    assert_eq!(
        workspace_members("[workspace]\nmembers = [\"a\", \"b\"]\n"),
        ["a", "b"]
    );
}

#[test]
fn circles_of_two_and_more_are_found_and_chains_are_not() {
    let graph = |edges: &[(&str, &str)]| {
        let mut graph: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        for (from, to) in edges {
            graph
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string(), 1);
            graph.entry(to.to_string()).or_default();
        }
        graph
    };
    assert!(circles(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    assert_eq!(
        circles(&graph(&[
            ("a", "b"),
            ("b", "a"),
            ("c", "d"),
            ("d", "e"),
            ("e", "c"),
            ("e", "f")
        ])),
        [vec!["a", "b"], vec!["c", "d", "e"]]
    );
}

#[test]
fn only_the_first_comment_keeps_a_file_whole() {
    let marked =
        format!("\n//! The thing.\n//!\n//! {KEPT_WHOLE_MARKER} one state machine.\nfn f() {{}}\n");
    assert!(first_comment_keeps_whole(&marked));
    let later = format!("//! The thing.\n\nfn f() {{}}\n// {KEPT_WHOLE_MARKER} too late.\n");
    assert!(!first_comment_keeps_whole(&later));
}

/// Writes `files` (path, contents) under `root`.
fn write_files(root: &Path, files: &[(&str, String)]) {
    for (name, contents) in files {
        let file = root.join(name);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, contents).unwrap();
    }
}

/// A small workspace that keeps the rules: a library member, a binary
/// member and a root package, with a long file marked as kept whole, a
/// long binary-only file, and circles and length only in test code.
fn fixture_workspace(root: &Path) {
    let long = |first: &str| format!("{first}\n{}", "fn f() {}\n".repeat(MAX_LINES));
    write_files(
        root,
        &[
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"alpha\", \"tool\"]\n\n[package]\nname = \"fixture\"\n"
                    .to_string(),
            ),
            (
                "alpha/Cargo.toml",
                "[package]\nname = \"alpha\"\n".to_string(),
            ),
            (
                "alpha/src/lib.rs",
                "//! Alpha.\npub mod one;\npub mod two;\nmod nested;\n\
                 #[cfg(test)]\nmod tests;\n"
                    .to_string(),
            ),
            (
                "alpha/src/one.rs",
                "//! One.\nuse crate::two::Thing;\npub fn make() -> Thing { Thing }\n".to_string(),
            ),
            (
                "alpha/src/two.rs",
                "//! Two.\npub struct Thing;\n\
                 #[cfg(test)]\nmod tests { use crate::one::make; }\n"
                    .to_string(),
            ),
            (
                "alpha/src/nested/mod.rs",
                "//! Nested.\nmod leaf;\npub use leaf::Leaf;\nuse crate::one;\n".to_string(),
            ),
            (
                "alpha/src/nested/leaf.rs",
                long(&format!(
                    "//! Leaf.\n//!\n//! {KEPT_WHOLE_MARKER} one table.\n\
                     use super::super::two;\nuse super::one;\npub struct Leaf;"
                )),
            ),
            (
                "alpha/src/tests.rs",
                long("//! Tests, as long as they like.\nuse crate::nested::Leaf;"),
            ),
            (
                "tool/Cargo.toml",
                "[package]\nname = \"tool\"\n".to_string(),
            ),
            ("tool/src/main.rs", long("//! A long binary.\nfn main() {}")),
            (
                "src/main.rs",
                "//! Root.\nmod commands;\nfn main() {}\n".to_string(),
            ),
            (
                "src/commands/mod.rs",
                "//! Commands.\nmod bench;\nmod sweep;\nuse bench::run;\n".to_string(),
            ),
            (
                "src/commands/bench.rs",
                "//! Bench.\nuse super::sweep::sizes;\npub fn run() {}\n".to_string(),
            ),
            (
                "src/commands/sweep.rs",
                "//! Sweep.\nuse super::Shared;\npub fn sizes() {}\n".to_string(),
            ),
        ],
    );
}

#[test]
fn a_workspace_that_keeps_the_rules_passes() {
    let dir = tempfile::tempdir().unwrap();
    fixture_workspace(dir.path());
    assert_eq!(module_circles(dir.path()), Vec::<String>::new());
    assert_eq!(oversized_files(dir.path()), Vec::<String>::new());
}

#[test]
fn circles_and_long_files_of_a_workspace_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture_workspace(root);
    write_files(
        root,
        &[
            // alpha: two -> nested -> one -> two, a circle of three.
            (
                "alpha/src/two.rs",
                "//! Two.\nuse crate::nested::{self, Leaf};\npub struct Thing;\n".to_string(),
            ),
            // The root package: bench <-> sweep, and sweep too long.
            (
                "src/commands/sweep.rs",
                format!(
                    "//! Sweep, long and unmarked.\nuse crate::commands::{{bench::run}};\n{}",
                    "fn f() {}\n".repeat(MAX_LINES)
                ),
            ),
        ],
    );
    assert_eq!(
        module_circles(root),
        [
            "alpha: modules nested, one, two import each other:\n    \
             nested -> one (alpha/src/nested/mod.rs:4)\n    \
             one -> two (alpha/src/one.rs:2)\n    \
             two -> nested (alpha/src/two.rs:2)",
            "fixture: modules commands::bench, commands::sweep import each other:\n    \
             commands::bench -> commands::sweep (src/commands/bench.rs:2)\n    \
             commands::sweep -> commands::bench (src/commands/sweep.rs:2)",
        ]
    );
    assert_eq!(oversized_files(root), ["src/commands/sweep.rs: 602 lines"]);
}

#[test]
fn a_clap_type_beside_the_commands_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_files(
        root,
        &[
            ("Cargo.toml", "[package]\nname = \"fixture\"\n".to_string()),
            (
                "src/main.rs",
                "//! Root.\nmod cli;\nmod commands;\nmod request;\nmod store;\n\
                 use cli::Cli;\nfn main() {}\n"
                    .to_string(),
            ),
            ("src/cli.rs", "//! Clap.\npub struct Cli;\n".to_string()),
            (
                "src/commands.rs",
                "//! Commands.\nuse crate::cli::Cli;\n".to_string(),
            ),
            (
                "src/request.rs",
                "//! Requests.\nuse crate::{cli::Cli, store};\n".to_string(),
            ),
            (
                "src/store.rs",
                "//! Store.\n// crate::cli in a comment is no import.\nuse crate::cli::Cli;\n"
                    .to_string(),
            ),
        ],
    );
    assert_eq!(
        clap_type_imports(root),
        ["store imports cli (src/store.rs:3)"]
    );
}

#[test]
fn subcommand_imports_and_signal_handlers_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture_workspace(root);
    // The fixture's bench imports sweep, another subcommand.
    assert_eq!(
        subcommand_imports(root),
        ["commands::bench imports commands::sweep (src/commands/bench.rs:2)"]
    );
    assert_eq!(
        signal_handlers_outside_the_process_crate(root),
        Vec::<String>::new()
    );
    write_files(
        root,
        &[
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"alpha\", \"tool\", \"child-process\"]\n\n\
                 [workspace.dependencies]\nsignal-hook = \"0.3\"\n\n\
                 [package]\nname = \"fixture\"\n"
                    .to_string(),
            ),
            (
                "alpha/Cargo.toml",
                "[package]\nname = \"alpha\"\n[dependencies]\nsignal-hook.workspace = true\n"
                    .to_string(),
            ),
            (
                "alpha/src/one.rs",
                "//! One.\nuse crate::two::Thing;\n// libc::signal in a comment is no call.\n\
                 fn f() { unsafe { libc::signal(2, 1) }; }\n"
                    .to_string(),
            ),
            (
                "child-process/Cargo.toml",
                "[package]\nname = \"child-process\"\n[dependencies]\nsignal-hook = \"0.3\"\n"
                    .to_string(),
            ),
            (
                "child-process/src/lib.rs",
                "//! Signals.\nuse signal_hook::iterator::Signals;\n".to_string(),
            ),
            (
                "src/commands/sweep.rs",
                "//! Sweep.\nfn f(action: &libc::sigaction) {}\n".to_string(),
            ),
        ],
    );
    assert_eq!(
        signal_handlers_outside_the_process_crate(root),
        [
            "alpha/Cargo.toml: depends on signal-hook",
            "alpha/src/one.rs:4: installs a signal handler (libc)",
            "src/commands/sweep.rs:2: installs a signal handler (sigaction)",
        ]
    );
}
