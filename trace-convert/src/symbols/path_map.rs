//! Source paths as the outputs write them (LCOV `SF:`, the listings'
//! source lines): DWARF's path with its separators made `/` (firmware
//! built on Windows names `C:\ti\sdk\source\drivers/x.h`, which no
//! Unix tool reads), then rewritten by the first `--path-map FROM=TO`
//! whose FROM begins it (as gcc's `-fdebug-prefix-map` and llvm-cov's
//! `-path-equivalence` do), so the sources are found where they are on
//! this machine.

use std::borrow::Cow;

/// Prefix rewrites of source paths, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMap {
    /// (FROM, TO), both with `/` separators, FROM without a trailing `/`
    /// (unless it is only `/`).
    pairs: Vec<(String, String)>,
}

/// `path` with every `\` made `/`.
#[must_use]
pub fn forward_slashes(path: &str) -> Cow<'_, str> {
    if path.contains('\\') {
        Cow::Owned(path.replace('\\', "/"))
    } else {
        Cow::Borrowed(path)
    }
}

/// `path` (with `/` separators) without `.` components and with each
/// `name/..` pair removed, as far as the path itself tells (`..` at its
/// start stays): `C:/ws/Debug/../src/./main.c` is `C:/ws/src/main.c`.
#[must_use]
pub fn without_dots(path: &str) -> Cow<'_, str> {
    let dotted = path.split('/').any(|c| c == "." || c == "..");
    if !dotted {
        return Cow::Borrowed(path);
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "." => {}
            ".." if parts
                .last()
                .is_some_and(|p| !p.is_empty() && *p != ".." && !p.ends_with(':')) =>
            {
                parts.pop();
            }
            // Nothing is above the root.
            ".." if parts == [""] => {}
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    Cow::Owned(if joined.is_empty() {
        "/".to_owned()
    } else {
        joined
    })
}

impl PathMap {
    /// No rewrites: paths only get `/` separators.
    #[must_use]
    pub fn new() -> PathMap {
        PathMap::default()
    }

    /// Add a rewrite given as `FROM=TO` (split at the first `=`; FROM is
    /// a path prefix, TO what replaces it, possibly empty).
    ///
    /// # Errors
    ///
    /// A message when there is no `=` or FROM is empty.
    pub fn add_spec(&mut self, spec: &str) -> Result<(), String> {
        let (from, to) = spec
            .split_once('=')
            .ok_or_else(|| format!("`{spec}` is not FROM=TO"))?;
        if from.is_empty() {
            return Err(format!("`{spec}`: FROM is empty"));
        }
        self.add(from, to);
        Ok(())
    }

    /// Add a rewrite of the prefix `from` into `to`.
    pub fn add(&mut self, from: &str, to: &str) {
        let from = forward_slashes(from);
        let trimmed = from.trim_end_matches('/');
        let from = if trimmed.is_empty() { "/" } else { trimmed };
        let to = forward_slashes(to);
        self.pairs.push((from.to_owned(), to.into_owned()));
    }

    /// Whether there are no rewrites.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// `path` as the outputs write it: `/` separators, no `.` components
    /// nor `name/..` pairs ([`without_dots`]), then the first
    /// rewrite whose FROM is a prefix of it ending at a `/` (or all of
    /// it) applied.
    #[must_use]
    pub fn apply<'a>(&self, path: &'a str) -> Cow<'a, str> {
        let path = match forward_slashes(path) {
            Cow::Borrowed(p) => without_dots(p),
            Cow::Owned(p) => Cow::Owned(without_dots(&p).into_owned()),
        };
        for (from, to) in &self.pairs {
            let Some(rest) = path.strip_prefix(from.as_str()) else {
                continue;
            };
            if !(rest.is_empty() || rest.starts_with('/') || from.ends_with('/')) {
                continue;
            }
            // TO and the rest meet at one `/` (none when TO is empty:
            // the rest is then relative).
            let rest = rest.trim_start_matches('/');
            let joined = match (to.is_empty(), rest.is_empty()) {
                (true, _) => rest.to_owned(),
                (false, true) => to.clone(),
                (false, false) => format!("{}/{rest}", to.trim_end_matches('/')),
            };
            return Cow::Owned(joined);
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map(specs: &[&str]) -> PathMap {
        let mut m = PathMap::new();
        for s in specs {
            m.add_spec(s).expect("spec");
        }
        m
    }

    #[test]
    fn windows_paths_get_forward_slashes_and_are_mapped() {
        let p = r"C:/ti/mcu_plus_sdk_am243x_10_00_00_20/source\drivers/hw_include/cslr.h";
        assert_eq!(
            PathMap::new().apply(p),
            "C:/ti/mcu_plus_sdk_am243x_10_00_00_20/source/drivers/hw_include/cslr.h"
        );
        let m = map(&[r"C:\ti\mcu_plus_sdk_am243x_10_00_00_20=/opt/sdk"]);
        assert_eq!(m.apply(p), "/opt/sdk/source/drivers/hw_include/cslr.h");
        // A prefix ends at a separator: C:/tiger is not under C:/ti.
        let m = map(&["C:/ti=/x"]);
        assert_eq!(m.apply("C:/tiger/a.c"), "C:/tiger/a.c");
        assert_eq!(m.apply("C:/ti"), "/x");
        // The first that matches; an empty TO leaves a relative path.
        let m = map(&["C:/a/b=", "C:/a=/y/"]);
        assert_eq!(m.apply("C:/a/b/c.c"), "c.c");
        assert_eq!(m.apply("C:/a/c.c"), "/y/c.c");
        assert_eq!(map(&["/=/root/"]).apply("/src/a.c"), "/root/src/a.c");
    }

    #[test]
    fn dot_components_are_taken_out() {
        let m = PathMap::new();
        assert_eq!(
            m.apply(r"C:\ws\proj\Debug\../src\main.c"),
            "C:/ws/proj/src/main.c"
        );
        assert_eq!(m.apply("e:/a/src/./autoinit.h"), "e:/a/src/autoinit.h");
        assert_eq!(m.apply("../x/./y.c"), "../x/y.c");
        assert_eq!(m.apply("/a/../../b.c"), "/b.c");
        assert_eq!(m.apply("C:/../b.c"), "C:/../b.c");
        // Other empty components stay (`//server/share` is a path of its
        // own on Windows).
        assert_eq!(m.apply(r"\\server\share\a.c"), "//server/share/a.c");
        assert_eq!(m.apply("plain/path.c"), "plain/path.c");
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut m = PathMap::new();
        assert!(m.add_spec("no-equals").is_err());
        assert!(m.add_spec("=/x").is_err());
        assert!(m.add_spec("a=b=c").is_ok());
        assert_eq!(m.apply("a/x"), "b=c/x");
    }

    proptest! {
        #[test]
        fn mapping_replaces_exactly_the_prefix(
            from in "[a-zA-Z:]{1,4}(/[a-z0-9_-][a-z0-9._-]{0,4}){0,3}",
            to in "(/[a-z0-9_-][a-z0-9._-]{0,4}){0,3}",
            rest in "([/\\\\][a-z0-9_-][a-z0-9._-]{0,4}){0,3}",
            other in "[^=]{0,12}",
        ) {
            let m = map(&[&format!("{from}={to}")]);
            let path = format!("{from}{rest}");
            let got = m.apply(&path);
            let rest = rest.replace('\\', "/");
            let tail = rest.trim_start_matches('/');
            let want = match (to.is_empty(), tail.is_empty()) {
                (true, _) => tail.to_owned(),
                (false, true) => to.clone(),
                (false, false) => format!("{to}/{tail}"),
            };
            prop_assert_eq!(got.as_ref(), want.as_str());
            // Any string maps without a panic, to a path without `\`.
            let any = m.apply(&other);
            prop_assert!(!any.contains('\\'));
        }
    }
}
