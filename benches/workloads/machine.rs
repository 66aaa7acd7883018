//! What a run records beside its numbers: the machine, the load, and
//! where criterion's directory is.

use std::path::PathBuf;

/// Where criterion writes: `$CRITERION_HOME`, `$CARGO_TARGET_DIR/criterion`
/// or `target/criterion`.
pub(crate) fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| "target".into(), PathBuf::from);
    target.join("criterion")
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The machine the numbers belong to: CPU, cores, compiler, source state.
pub(crate) fn machine_line() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split(':').nth(1))
        .map_or("unknown CPU", str::trim);
    let hypervisor = if cpuinfo.contains(" hypervisor") {
        ", virtualised"
    } else {
        ""
    };
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let rustc = command_line(&rustc, &["--version"]).unwrap_or_else(|| "rustc ?".to_owned());
    let commit =
        command_line("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".to_owned());
    let dirty = command_line("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    format!(
        "{model}, {cpus} CPUs{hypervisor}, {} {}; {rustc}; tickwheel at {commit}{}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        if dirty { " + uncommitted changes" } else { "" },
    )
}

/// The 1, 5 and 15 minute load averages.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|load| {
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "?".to_owned())
}

/// How a workload bench starts: full sizes under `cargo bench` (`--bench`
/// among the arguments), else a smoke test; prints the machine line and
/// the load, and returns `(full, machine line, load at start)`.
pub(crate) fn start() -> (bool, String, String) {
    let full = std::env::args().any(|arg| arg == "--bench");
    let machine = machine_line();
    let load_start = load_average();
    println!("machine: {machine}");
    println!("load average at start: {load_start}");
    if !full {
        println!("(no --bench: a smoke test at 1/100 of the sizes)");
    }
    (full, machine, load_start)
}
