//! Logging as Lambda's advanced logging controls ask: JSON lines when
//! `AWS_LAMBDA_LOG_FORMAT=JSON` (the template's setting), text otherwise;
//! the level from `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG`, else INFO.
//!
//! The same as `lambda_runtime::tracing::init_default_subscriber`, without
//! its per-target filter (`RUST_LOG=worker=debug,hyper=warn`): that filter
//! compiles regular expressions and cost each binary ~0.1 MB. A level is
//! what the functions are ever run with; a directive list uses its last
//! bare level, or INFO.
//!
//! Shipped (release) builds have nothing below INFO to print: the
//! workspace builds `tracing` with `release_max_level_info`, which compiles
//! the libraries' debug and trace call sites out (half a megabyte of the
//! worker). `DEBUG` shows them in debug builds: the tests, the local
//! runner, `cargo lambda watch`.

use tracing::level_filters::LevelFilter;

/// Installs the process's subscriber; call once, first thing in `main`.
pub fn init() {
    let format = std::env::var("AWS_LAMBDA_LOG_FORMAT").unwrap_or_default();
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG")).unwrap_or_default();
    let subscriber = tracing_subscriber::fmt()
        .with_target(false)
        .without_time()
        .with_max_level(level_of(&level))
        .with_writer(std::io::stdout);
    if format.eq_ignore_ascii_case("json") {
        subscriber.json().init();
    } else {
        subscriber.init();
    }
}

/// `debug` → DEBUG; `worker=debug,warn` → WARN (the bare level); anything
/// else → INFO.
fn level_of(setting: &str) -> LevelFilter {
    setting
        .split(',')
        .rev()
        .map(str::trim)
        // `tracing` reads an empty string as ERROR.
        .filter(|directive| !directive.is_empty())
        .find_map(|directive| directive.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_comes_from_a_bare_level_or_defaults_to_info() {
        assert_eq!(level_of("debug"), LevelFilter::DEBUG);
        assert_eq!(level_of("WARN"), LevelFilter::WARN);
        assert_eq!(level_of("worker=debug,error"), LevelFilter::ERROR);
        assert_eq!(level_of("worker=debug"), LevelFilter::INFO);
        assert_eq!(level_of(""), LevelFilter::INFO);
        assert_eq!(level_of("nonsense"), LevelFilter::INFO);
    }
}
