//! What bounds the waits of a session with a PostgreSQL server
//! ([`ServerTimeouts`]), read from the address: `connect_timeout`
//! (libpq's name and reading, which bounds the whole start-up of a
//! connection here as there), and `statement_timeout` and
//! `lock_timeout`, the server's own settings, which netbisect sends as
//! start-up options (`-c name=value`) before any the address's own
//! `options` give, so that those win.

use std::time::Duration;

/// How long the start-up of a connection may take (connecting, TLS,
/// authentication and the first query), per host the address names,
/// unless the address says otherwise (`connect_timeout`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a statement may run, unless the address says otherwise
/// (`statement_timeout`): minutes, for an archive check or a merge of a
/// large archive, yet an end to a statement that never finishes.
pub const DEFAULT_STATEMENT_TIMEOUT: &str = "10min";

/// The longest a statement may wait for a lock another session holds,
/// unless the address says otherwise (`lock_timeout`): long enough for
/// another netbisect's upgrade of a large archive (a minute and more for
/// a million runs) or a long import, which writers wait for, and short
/// of the statement's own bound, so that a table locked by another
/// program ends in an error that says so.
pub const DEFAULT_LOCK_TIMEOUT: &str = "5min";

/// What bounds the waits of a session with the server: the defaults,
/// unless the address gives `connect_timeout`, `statement_timeout` or
/// `lock_timeout` in its query, or sets the last two in its `options`
/// (`options=-c%20lock_timeout%3D10s`), which win.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTimeouts {
    /// The whole start-up of a connection, per host the address names:
    /// connecting, TLS, authentication and the first query
    /// (`connect_timeout`, whole seconds); `None` when the address gives
    /// 0 or less, which libpq reads as no bound.
    pub start_up: Option<Duration>,
    /// The server's bound on one statement (`statement_timeout`), as the
    /// server reads it: milliseconds, or a whole number with one of the
    /// units `ms`, `s`, `min`, `h`, `d`; `0` is no bound.
    pub statement: String,
    /// The server's bound on one wait for a lock another session holds
    /// (`lock_timeout`), written as `statement` is.
    pub lock: String,
}

impl Default for ServerTimeouts {
    fn default() -> ServerTimeouts {
        ServerTimeouts {
            start_up: Some(DEFAULT_CONNECT_TIMEOUT),
            statement: DEFAULT_STATEMENT_TIMEOUT.to_string(),
            lock: DEFAULT_LOCK_TIMEOUT.to_string(),
        }
    }
}

impl ServerTimeouts {
    /// The defaults, with what the query of the address `text` gives,
    /// and `text` without those keys; an unreadable value is the reason
    /// it is refused. netbisect reads these keys itself, before the
    /// client reads the rest: the client refuses `statement_timeout` and
    /// `lock_timeout`, and reads a `connect_timeout` of 0 as no setting
    /// rather than as no bound.
    pub(super) fn from_query(text: &str) -> Result<(String, ServerTimeouts), String> {
        let mut timeouts = ServerTimeouts::default();
        let Some((base, query)) = text.split_once('?') else {
            return Ok((text.to_string(), timeouts));
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "connect_timeout" => {
                    let seconds: i64 = value.parse().map_err(|_| {
                        format!("connect_timeout={value}: give whole seconds (0: no bound)")
                    })?;
                    timeouts.start_up = u64::try_from(seconds)
                        .ok()
                        .filter(|&seconds| seconds > 0)
                        .map(Duration::from_secs);
                }
                "statement_timeout" | "lock_timeout" => {
                    if !is_server_duration(value) {
                        return Err(format!(
                            "{key}={value}: give milliseconds, or a whole number with \
                             ms, s, min, h or d (30s, 5min); 0 is no bound"
                        ));
                    }
                    if key == "lock_timeout" {
                        timeouts.lock = value.to_string();
                    } else {
                        timeouts.statement = value.to_string();
                    }
                }
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        Ok((rest, timeouts))
    }

    /// These timeouts as the server's start-up options, before the
    /// address's own `options`, which may set them again and then win:
    /// the server applies `-c` settings in order. The values the
    /// address's options give are taken as the ones in force.
    pub(super) fn start_up_options(&mut self, given: Option<&str>) -> String {
        let mut options = format!(
            "-c statement_timeout={} -c lock_timeout={}",
            self.statement, self.lock
        );
        if let Some(given) = given {
            for (name, value) in option_settings(given) {
                match name.replace('-', "_").as_str() {
                    "statement_timeout" => self.statement = value,
                    "lock_timeout" => self.lock = value,
                    _ => {}
                }
            }
            options.push(' ');
            options.push_str(given);
        }
        options
    }
}

/// True when `text` is a duration as the server reads a time setting and
/// netbisect accepts one: a whole number, bare (milliseconds) or with one
/// of the units `ms`, `s`, `min`, `h`, `d`.
fn is_server_duration(text: &str) -> bool {
    let digits_end = text
        .find(|character: char| !character.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    !number.is_empty() && ["", "ms", "s", "min", "h", "d"].contains(&unit)
}

/// The `name=value` settings of a server's start-up options, as given
/// with `-c name=value`, `-cname=value` or `--name=value`.
fn option_settings(options: &str) -> Vec<(String, String)> {
    let mut settings = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(word) = words.next() {
        let setting = match word {
            "-c" => words.next(),
            _ => word.strip_prefix("--").or_else(|| word.strip_prefix("-c")),
        };
        if let Some((name, value)) = setting.and_then(|setting| setting.split_once('=')) {
            settings.push((name.to_string(), value.to_string()));
        }
    }
    settings
}
