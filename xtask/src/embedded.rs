//! `cargo xtask embedded`: the three decoder-side crates on real Cortex-M
//! targets, and the firmware in `crates/nostd-firmware` run under QEMU with
//! its size and stack budgets checked (docs/benchmarks.md, "Embedded").

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cargo_cmd, run, Result, ROOT};

/// One target, the QEMU board that runs it, and its budgets.
struct Board {
    target: &'static str,
    core: &'static str,
    qemu: &'static [&'static str],
    /// The `budget` program's: a reader of `f32` tensors.
    typed: Budget,
    /// The `budget_any` program's: a reader of any element type.
    any: Budget,
}

/// What decode + strict validation + lookup + iteration may cost.
struct Budget {
    /// Flash (`.vector_table` + `.text` + `.rodata` + `.data`) of the
    /// program minus `baseline`.
    flash: u64,
    /// The program's stack high-water mark.
    stack: u64,
}

/// The Cortex-M4's `budget` budgets are the issue's, 16 KiB of flash and
/// 2 KiB of stack; the others are the measured figures plus a little room,
/// so that a change that grows the code or the stack fails here.
/// docs/benchmarks.md records the measurements, and what takes the space.
const BOARDS: &[Board] = &[
    Board {
        target: "thumbv7em-none-eabihf",
        core: "Cortex-M4F (mps2-an386)",
        qemu: &["-machine", "mps2-an386", "-cpu", "cortex-m4"],
        // Measured 15,956 B / 1,640 B and 19,288 B / 1,640 B (2026-12-01).
        typed: Budget { flash: 16 * 1024, stack: 2 * 1024 },
        any: Budget { flash: 20 * 1024, stack: 2 * 1024 },
    },
    Board {
        target: "thumbv6m-none-eabi",
        core: "Cortex-M0 (microbit)",
        qemu: &["-machine", "microbit"],
        // Measured 17,104 B / 1,936 B and 22,664 B / 1,936 B (2026-12-01).
        typed: Budget { flash: 17 * 1024 + 512, stack: 2 * 1024 + 512 },
        any: Budget { flash: 23 * 1024, stack: 2 * 1024 + 512 },
    },
];

/// Every check the `check` program makes; fewer lines means one was skipped.
const FIRMWARE_CHECKS: usize = 39;

const LIBRARIES: [&str; 3] = ["hurray-format", "csf-core", "csf-validate"];

/// Libraries that are `no_std` with an allocator (`alloc`): built for each
/// board too, without default features, which proves that no `std` leaks
/// into them or their dependencies (the targets have none). nostd-check,
/// which links without an allocator, cannot take them.
pub(crate) const ALLOC_LIBRARIES: [&str; 1] = ["csf-kernels"];

pub(crate) fn embedded() -> Result {
    let started = Instant::now();
    let targets: Vec<&str> = BOARDS.iter().map(|b| b.target).collect();
    ensure_targets(&targets)?;
    ensure_qemu()?;
    // The libraries alone, without default features, as a user's firmware
    // depends on them (each on its own, so features cannot unify).
    for board in BOARDS {
        for krate in LIBRARIES {
            run(cargo_cmd().args(["build", "--locked", "--release", "-p", krate, "--target", board.target]))?;
        }
        for krate in ALLOC_LIBRARIES {
            let args = ["build", "--locked", "--release", "--no-default-features", "-p", krate, "--target"];
            run(cargo_cmd().args(args).arg(board.target))?;
        }
    }
    let dir = Path::new(ROOT).join("crates/nostd-firmware");
    let target_dir = Path::new(ROOT).join("target/firmware");
    let firmware = || {
        let mut cmd = cargo_cmd();
        cmd.current_dir(&dir).env("CARGO_TARGET_DIR", &target_dir);
        cmd
    };
    run(firmware().args(["fmt", "--check"]))?;
    let mut report = Vec::new();
    for board in BOARDS {
        run(firmware().args([
            "clippy",
            "--locked",
            "--release",
            "--target",
            board.target,
            "--",
            "-D",
            "warnings",
        ]))?;
        run(firmware().args(["build", "--locked", "--release", "--bins", "--target", board.target]))?;
        let bin = |name: &str| target_dir.join(board.target).join("release").join(name);
        let out = qemu(board, &bin("check"))?;
        let ok = out.lines().filter(|l| l.starts_with("check ") && l.ends_with(": ok")).count();
        let summary = format!("firmware: {FIRMWARE_CHECKS} checks, 0 failures");
        if ok != FIRMWARE_CHECKS || !out.lines().any(|l| l == summary) || out.contains("FAILED") {
            return Err(format!(
                "{}: the firmware's report is not `{summary}` ({ok} ok lines)",
                board.target
            ));
        }
        let baseline_stack = stack(&qemu(board, &bin("baseline"))?, "baseline")?;
        let check_stack = stack(&out, "check")?;
        let baseline = Sizes::of(&bin("baseline"))?;
        for (program, budget) in [("budget", &board.typed), ("budget_any", &board.any)] {
            let stack = stack(&qemu(board, &bin(program))?, program)?;
            let sizes = Sizes::of(&bin(program))?;
            for (name, sizes) in [(program, &sizes), ("baseline", &baseline)] {
                if let Some(symbol) = &sizes.allocator {
                    return Err(format!("{}: `{name}` links an allocator ({symbol})", board.target));
                }
            }
            let flash = sizes.flash.saturating_sub(baseline.flash);
            let ram = sizes.ram.saturating_sub(baseline.ram);
            report.push(format!(
                "{:<22} {:<24} {:<10} flash {:>6} B (budget {:>6})  static RAM {:>3} B  stack {:>5} B \
                 (budget {:>5}; baseline {} B, check {} B)  heap none",
                board.target,
                board.core,
                program,
                flash,
                budget.flash,
                ram,
                stack,
                budget.stack,
                baseline_stack,
                check_stack
            ));
            if flash > budget.flash || stack > budget.stack || ram > 0 {
                eprintln!("{}", report.join("\n"));
                return Err(format!(
                    "{}: `{program}` over budget (flash {flash} > {} or stack {stack} > {} or static RAM \
                     {ram} > 0); see docs/benchmarks.md, \"Embedded\", for how the figures are taken",
                    board.target, budget.flash, budget.stack
                ));
            }
        }
    }
    eprintln!(
        "\nembedded: decode + strict validation + lookup + iteration (each program minus `baseline`; \
         `budget` reads f32 values, `budget_any` any element type)"
    );
    for line in &report {
        eprintln!("  {line}");
    }
    eprintln!("embedded: both boards passed in {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Adds the rustup targets that are missing (a few seconds each).
fn ensure_targets(targets: &[&str]) -> Result {
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    let installed = installed.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let missing: Vec<&str> =
        targets.iter().copied().filter(|t| !installed.lines().any(|l| l == *t)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add"]).args(&missing))
}

/// Installs Debian's `qemu-system-arm` when it is missing (CI runs as root).
fn ensure_qemu() -> Result {
    let probe = Command::new("qemu-system-arm").arg("--version").stdout(Stdio::null()).status();
    if probe.is_ok_and(|s| s.success()) {
        return Ok(());
    }
    eprintln!("qemu-system-arm is not installed; installing Debian's package");
    run(Command::new("apt-get").args(["update", "-qq"]))
        .and_then(|()| run(Command::new("apt-get").args(["install", "-y", "-qq", "qemu-system-arm"])))
        .map_err(|e| format!("{e}\n  install QEMU's Arm system emulator (Debian: qemu-system-arm) and rerun"))
}

/// Runs `elf` on the board under QEMU with semihosting, with a time limit,
/// and returns what it printed; a non-zero exit status is an error.
fn qemu(board: &Board, elf: &Path) -> Result<String> {
    let mut cmd = Command::new("qemu-system-arm");
    cmd.args(board.qemu)
        .args(["-nographic", "-monitor", "none", "-serial", "none"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    eprintln!("$ {}", crate::show(&cmd));
    let mut child = cmd.spawn().map_err(|e| format!("could not start qemu-system-arm: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} did not finish within 60 s under QEMU", elf.display()));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out).map_err(|e| e.to_string())?;
    }
    eprint!("{out}");
    if !status.success() {
        return Err(format!("{} failed under QEMU ({status})", elf.display()));
    }
    Ok(out)
}

/// The figure of `PROGRAM: stack high-water N bytes of M`.
fn stack(out: &str, program: &str) -> Result<u64> {
    let prefix = format!("{program}: stack high-water ");
    out.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.split(' ').next()?.parse().ok())
        .ok_or_else(|| format!("`{program}` printed no stack high-water mark"))
}

/// What an ELF file puts in flash and RAM.
struct Sizes {
    /// `.vector_table`, `.text`, `.rodata` (and `.data`'s initial values).
    flash: u64,
    /// `.data`, `.bss`, `.uninit`.
    ram: u64,
    /// An allocator's symbol, if one is linked.
    allocator: Option<String>,
}

impl Sizes {
    fn of(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let elf =
            elf::Elf32::parse(&bytes).ok_or_else(|| format!("{}: not a 32-bit ELF file", path.display()))?;
        let (mut flash, mut ram) = (0, 0);
        for section in elf.sections() {
            match section.name {
                ".vector_table" | ".text" | ".rodata" => flash += u64::from(section.size),
                ".data" => {
                    flash += u64::from(section.size);
                    ram += u64::from(section.size);
                }
                ".bss" | ".uninit" => ram += u64::from(section.size),
                _ => {}
            }
        }
        let allocator = elf.symbols().find(|s| s.contains("__rust_alloc") || s.contains("__rg_alloc"));
        Ok(Self { flash, ram, allocator: allocator.map(str::to_owned) })
    }
}

/// Just enough of ELF32 (little-endian) to list sections and symbol names.
mod elf {
    pub struct Elf32<'a> {
        bytes: &'a [u8],
        sections: Vec<(u32, u32, u32, u32, u32)>, // name, type, offset, size, link
        names: (usize, usize),
    }

    pub struct Section<'a> {
        pub name: &'a str,
        pub size: u32,
    }

    fn u16_at(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
    }

    fn u32_at(b: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    }

    fn str_at(b: &[u8], table: (usize, usize), at: u32) -> Option<&str> {
        let table = b.get(table.0..table.0 + table.1)?;
        let rest = table.get(at as usize..)?;
        std::str::from_utf8(&rest[..rest.iter().position(|&c| c == 0)?]).ok()
    }

    impl<'a> Elf32<'a> {
        pub fn parse(bytes: &'a [u8]) -> Option<Self> {
            // Magic, 32-bit class, little-endian.
            if bytes.get(..6)? != b"\x7fELF\x01\x01" {
                return None;
            }
            let (shoff, shentsize) = (u32_at(bytes, 0x20)? as usize, usize::from(u16_at(bytes, 0x2e)?));
            let (shnum, shstrndx) = (usize::from(u16_at(bytes, 0x30)?), usize::from(u16_at(bytes, 0x32)?));
            let mut sections = Vec::new();
            for i in 0..shnum {
                let at = shoff + i * shentsize;
                let field = |k: usize| u32_at(bytes, at + 4 * k);
                sections.push((field(0)?, field(1)?, field(4)?, field(5)?, field(6)?));
            }
            let &(_, _, offset, size, _) = sections.get(shstrndx)?;
            Some(Self { bytes, sections, names: (offset as usize, size as usize) })
        }

        pub fn sections(&self) -> impl Iterator<Item = Section<'_>> {
            self.sections.iter().filter_map(|&(name, _, _, size, _)| {
                Some(Section { name: str_at(self.bytes, self.names, name)?, size })
            })
        }

        /// The names in the symbol table (`SHT_SYMTAB`, type 2).
        pub fn symbols(&self) -> impl Iterator<Item = &str> {
            let symtab = self.sections.iter().find(|s| s.1 == 2).copied();
            let strtab =
                symtab.and_then(|s| self.sections.get(s.4 as usize)).map(|s| (s.2 as usize, s.3 as usize));
            let (offset, size) = symtab.map_or((0, 0), |s| (s.2 as usize, s.3 as usize));
            (0..size / 16).filter_map(move |i| {
                let name = u32_at(self.bytes, offset + 16 * i)?;
                str_at(self.bytes, strtab?, name)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::elf::Elf32;

    /// A minimal ELF32 file: the header, then a null section, `.shstrtab`
    /// and a 100-byte `.text`, as section headers of 40 bytes each.
    #[test]
    fn elf32_sections_are_read() {
        let names = b"\0.shstrtab\0.text\0";
        let mut file = vec![0u8; 52];
        file[..6].copy_from_slice(b"\x7fELF\x01\x01");
        let names_at = file.len() as u32;
        file.extend_from_slice(names);
        let shoff = file.len() as u32;
        file[0x20..0x24].copy_from_slice(&shoff.to_le_bytes());
        file[0x2e..0x30].copy_from_slice(&40u16.to_le_bytes());
        file[0x30..0x32].copy_from_slice(&3u16.to_le_bytes());
        file[0x32..0x34].copy_from_slice(&1u16.to_le_bytes());
        for (name, kind, offset, size) in
            [(0u32, 0u32, 0u32, 0u32), (1, 3, names_at, names.len() as u32), (11, 1, 0, 100)]
        {
            let mut header = [0u8; 40];
            for (k, v) in [(0, name), (1, kind), (4, offset), (5, size)] {
                header[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
            file.extend_from_slice(&header);
        }
        let elf = Elf32::parse(&file).unwrap();
        let sections: Vec<(&str, u32)> = elf.sections().map(|s| (s.name, s.size)).collect();
        assert_eq!(sections, [("", 0), (".shstrtab", names.len() as u32), (".text", 100)]);
        assert_eq!(elf.symbols().count(), 0, "no symbol table");
        assert!(Elf32::parse(&file[..40]).is_none(), "a cut header");
        file[4] = 2;
        assert!(Elf32::parse(&file).is_none(), "a 64-bit file");
    }
}
