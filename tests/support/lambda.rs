//! A real function binary under AWS's Lambda Runtime Interface Emulator (the
//! one `aws-sam-cli` bundles): the same Runtime API the binary talks to in
//! Lambda, driven over HTTP as `sam local invoke` would.

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct LambdaUnderRie {
    rie: Child,
    invoke_url: String,
    log_path: PathBuf,
    http: reqwest::Client,
}

/// Options for one function process.
#[derive(Default)]
pub struct Launch<'a> {
    /// The function's environment (the runtime contract's variables).
    pub env: Vec<(&'a str, String)>,
    /// Pin the function's wall clock (faketime syntax, e.g. `@2025-11-22 08:26:40`).
    pub clock: Option<&'a str>,
    /// Start the binary linked as it ships (`SHIPPED_BIN_DIR`: static,
    /// `shipped_link` in infra/tools.sh) rather than the tests' build
    /// (`FUNCTION_BIN_DIR`). A static binary ignores `LD_PRELOAD`, so
    /// it cannot have its clock pinned.
    pub shipped: bool,
}

impl LambdaUnderRie {
    /// Starts `FUNCTION_BIN_DIR/{binary}` under the emulator on a free port.
    ///
    /// The emulator takes its ports by number: one found free may be taken
    /// by another test's server before it binds, so an emulator that exits
    /// at once is started again on other ports.
    pub fn start(binary: &str, launch: Launch<'_>) -> Result<Self> {
        let mut attempt = 1;
        loop {
            match Self::start_once(binary, &launch) {
                Err(err) if attempt < 3 && err.downcast_ref::<PortTaken>().is_some() => attempt += 1,
                started => return started,
            }
        }
    }

    fn start_once(binary: &str, launch: &Launch<'_>) -> Result<Self> {
        let rie = crate::env_from_test_command("AWS_LAMBDA_RIE");
        let directory = if launch.shipped { "SHIPPED_BIN_DIR" } else { "FUNCTION_BIN_DIR" };
        if launch.shipped && launch.clock.is_some() {
            bail!("a shipped binary is linked statically: faketime cannot pin its clock");
        }
        let binary_path = PathBuf::from(crate::env_from_test_command(directory)).join(binary);
        if !binary_path.exists() {
            bail!("{} does not exist: infra/test.sh builds it", binary_path.display());
        }
        if launch.shipped && !static_pie(&head_of(&binary_path)?) {
            bail!("{} is not a static position-independent executable: not linked as it ships", binary_path.display());
        }
        // The emulator's own endpoint and the Runtime API it serves the
        // function on: both on free ports, so tests run in parallel.
        let (port, runtime_api_port) = (free_port()?, free_port()?);
        let log_path = std::env::temp_dir().join(format!("{}.log", crate::unique_name(binary)));
        let log = File::create(&log_path)?;

        let mut command = Command::new(&rie);
        command
            .arg("--runtime-interface-emulator-address")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--runtime-api-address")
            .arg(format!("127.0.0.1:{runtime_api_port}"))
            .arg(&binary_path)
            // Lambda sets none of these: a developer's shell that does (one
            // pointing at a directory of ~290 files, say, or the whole
            // bundle as `AWS_CA_BUNDLE`) would make every start read
            // certificates a deployed function never reads.
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("AWS_CA_BUNDLE")
            .envs(launch.env.iter().map(|(name, value)| (*name, value)))
            .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
            .env_remove("AWS_SDK_UA_APP_ID")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // The SDK's app name: the function's calls say which test made
        // them. None outside a test (the benchmark): an empty one is an
        // invalid setting the SDK logs a warning for at every start.
        if let Some(test) = crate::current_test() {
            command.env("AWS_SDK_UA_APP_ID", test);
        }
        if let Some(clock) = launch.clock {
            command
                .env("LD_PRELOAD", crate::env_from_test_command("FAKETIME_LIB"))
                .env("FAKETIME", clock)
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
                .env("TZ", "UTC");
        }
        // Its own process group, so the function process it starts goes too.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut rie = command.spawn().with_context(|| format!("start {rie}"))?;

        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err()
            || TcpStream::connect(("127.0.0.1", runtime_api_port)).is_err()
        {
            if rie.try_wait()?.is_some() {
                let printed = std::fs::read_to_string(&log_path).unwrap_or_default();
                let _ = std::fs::remove_file(&log_path);
                return Err(PortTaken(printed).into());
            }
            if started.elapsed() > Duration::from_secs(10) {
                bail!("the Runtime Interface Emulator did not listen on {port} and {runtime_api_port} within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self {
            rie,
            invoke_url: format!("http://127.0.0.1:{port}/2015-03-31/functions/function/invocations"),
            log_path,
            http: reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?,
        })
    }

    /// One invocation, as Lambda would make it; returns the function's result.
    pub async fn invoke(&self, event: &Value) -> Result<Value> {
        let response = self.http.post(&self.invoke_url).json(event).send().await.context("invoke")?;
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            bail!("emulator answered {status}: {body}");
        }
        serde_json::from_str(&body).with_context(|| format!("function result is not JSON: {body}"))
    }

    /// The function's own process (the emulator's child), once an
    /// invocation has started it.
    pub fn function_pid(&self) -> Option<u32> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.rie.id())).ok()?;
        tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|children| children.split_whitespace().filter_map(|pid| pid.parse().ok()).collect::<Vec<u32>>())
            .next()
    }

    /// Everything the emulator and the function printed so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The CloudWatch Embedded Metric Format records the function printed,
    /// as CloudWatch reads them: JSON lines with an `_aws` object.
    pub fn emf_records(&self) -> Vec<Value> {
        self.logs()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|record| record.get("_aws").is_some())
            .collect()
    }
}

/// The emulator exited before it listened (a port it was given was taken
/// meanwhile, or the binary cannot run); what it printed.
#[derive(Debug)]
struct PortTaken(String);

impl std::fmt::Display for PortTaken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the Runtime Interface Emulator exited before it listened: {}", self.0)
    }
}

impl std::error::Error for PortTaken {}

/// A port free now, below the kernel's ephemeral range (32768 and up on
/// Linux): the emulator binds it by number a moment later, and a port from
/// that range may by then be the local end of any test's outgoing
/// connection (the SDK's, a fake's). Then the emulator's Runtime API fails
/// to listen, and it exits after its invoke port already answered.
fn free_port() -> Result<u16> {
    use std::hash::{BuildHasher, RandomState};
    for attempt in 0u64..200 {
        let port = 20_000 + (RandomState::new().hash_one(attempt) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port between 20000 and 32000 in 200 tries")
}

impl Drop for LambdaUnderRie {
    fn drop(&mut self) {
        let group = format!("-{}", self.rie.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.rie.wait();
        let _ = std::fs::remove_file(&self.log_path);
    }
}

/// A file's first 64 KiB: an ELF file's header and program headers.
fn head_of(path: &std::path::Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::new();
    File::open(path)?.take(64 * 1024).read_to_end(&mut head)?;
    Ok(head)
}

/// Whether `elf` (a 64-bit little-endian ELF file) is a static
/// position-independent executable: a shared object's type (`ET_DYN`, so
/// the kernel places it at a random address) with no program interpreter
/// (no dynamic loader, no shared libraries).
fn static_pie(elf: &[u8]) -> bool {
    let u16_at = |at: usize| elf.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |at: usize| elf.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    let u64_at = |at: usize| elf.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
    const ET_DYN: u16 = 3;
    const PT_INTERP: u32 = 3;
    if !elf.starts_with(b"\x7fELF\x02\x01") || u16_at(16) != Some(ET_DYN) {
        return false;
    }
    let (Some(table), Some(entry), Some(count)) = (u64_at(32), u16_at(54), u16_at(56)) else { return false };
    (0..usize::from(count))
        .all(|i| u32_at(table as usize + i * usize::from(entry)).is_some_and(|kind| kind != PT_INTERP))
}

#[cfg(test)]
mod tests {
    use super::static_pie;

    #[test]
    fn only_a_static_position_independent_executable_is_static_pie() {
        // This test binary: position-independent, with the system's loader.
        assert!(!static_pie(&std::fs::read(std::env::current_exe().unwrap()).unwrap()));
        assert!(!static_pie(b"#!/bin/sh\n"));
        assert!(!static_pie(&[]));
        // A header alone: ET_DYN, no program headers, so no interpreter.
        let mut header = vec![0u8; 64];
        header[..6].copy_from_slice(b"\x7fELF\x02\x01");
        header[16] = 3;
        assert!(static_pie(&header));
        header[16] = 2; // ET_EXEC: a fixed address
        assert!(!static_pie(&header));
    }
}
