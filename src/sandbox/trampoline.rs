//! The exec trampoline: a 200-byte static program through which the command is exec'd, so that
//! no process of the sandbox ever has polysandbox's host binary as its image.
//!
//! The init is a fork of the supervisor, not an exec: its image is the host binary, and so is
//! that of the child it spawns the command from, until that child execs. A command that is a
//! script starting `#!/proc/self/exe` makes the kernel open the exec'ing process's own image,
//! the host binary, as the interpreter (CVE-2019-5736's pattern): polysandbox then runs inside
//! the sandbox, where every other process of it reaches the host file through /proc/PID/exe.
//! Rootless, the sandbox's root is the caller, who owns that file: a `chmod 4755` made the
//! caller's binary setuid for every local user. runc and crun exec from a sealed copy of their
//! binary; ours is the trampoline, made fresh for each sandbox in a sealed memfd (nothing a
//! sandbox does to its copy reaches another sandbox): the child execs it, and it execs the
//! command. A script naming `/proc/self/exe` now names the trampoline, a private copy, which
//! only execs the script again until the time limit ends it.
//!
//! What it does, from the kernel's initial stack: `execve(argv[0], &argv[1], envp)`; if that
//! fails, it writes the errno (4 bytes) to fd 3 and exits 127. Fd 3 is the init's pipe, made
//! close-on-exec by the trampoline first, so that it closes when the command starts: EOF there
//! means the command was exec'd. The source is `trampoline.s` beside this file.

use std::os::fd::{FromRawFd, OwnedFd};

/// x86_64: the machine code of `trampoline.s` (`as`, then `objcopy -O binary -j .text`).
const X86_64: &[u8] = &[
    0xbf, 0x03, 0x00, 0x00, 0x00, 0xbe, 0x02, 0x00, 0x00, 0x00, 0xba, 0x01, 0x00, 0x00, 0x00, 0xb8, 0x48, 0x00, 0x00,
    0x00, 0x0f, 0x05, 0x48, 0x8b, 0x7c, 0x24, 0x08, 0x48, 0x8d, 0x74, 0x24, 0x10, 0x48, 0x8b, 0x04, 0x24, 0x48, 0x8d,
    0x54, 0xc4, 0x10, 0xb8, 0x3b, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xf7, 0xd8, 0x50, 0xbf, 0x03, 0x00, 0x00, 0x00, 0x48,
    0x89, 0xe6, 0xba, 0x04, 0x00, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xbf, 0x7f, 0x00, 0x00, 0x00,
    0xb8, 0xe7, 0x00, 0x00, 0x00, 0x0f, 0x05,
];

/// aarch64: the same (`aarch64-linux-gnu-as`).
const AARCH64: &[u8] = &[
    0x60, 0x00, 0x80, 0xd2, 0x41, 0x00, 0x80, 0xd2, 0x22, 0x00, 0x80, 0xd2, 0x28, 0x03, 0x80, 0xd2, 0x01, 0x00, 0x00,
    0xd4, 0xe0, 0x07, 0x40, 0xf9, 0xe1, 0x43, 0x00, 0x91, 0xe3, 0x03, 0x40, 0xf9, 0xe2, 0x6f, 0x23, 0x8b, 0x42, 0x40,
    0x00, 0x91, 0xa8, 0x1b, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4, 0xe0, 0x03, 0x00, 0x4b, 0xe0, 0x0f, 0x1f, 0xb8, 0x60,
    0x00, 0x80, 0xd2, 0xe1, 0x03, 0x00, 0x91, 0x82, 0x00, 0x80, 0xd2, 0x08, 0x08, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4,
    0xe0, 0x0f, 0x80, 0xd2, 0xc8, 0x0b, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4,
];

/// Where the program is loaded (above any `vm.mmap_min_addr`).
const BASE: u64 = 0x40_0000;
const EHDR: usize = 64;
const PHDR: usize = 56;

/// The whole ELF file for `machine` (EM_X86_64 or EM_AARCH64) and its code: one header, one
/// read+execute PT_LOAD of the file itself, the code after the headers.
fn elf(machine: u16, code: &[u8]) -> Vec<u8> {
    let entry = BASE + (EHDR + PHDR) as u64;
    let size = (EHDR + PHDR + code.len()) as u64;
    let mut f = Vec::with_capacity(size as usize);
    f.extend_from_slice(b"\x7fELF");
    f.extend_from_slice(&[2, 1, 1, 0]); // 64-bit, little-endian, version 1, System V
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f.extend_from_slice(&machine.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&entry.to_le_bytes());
    f.extend_from_slice(&(EHDR as u64).to_le_bytes()); // e_phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    f.extend_from_slice(&(EHDR as u16).to_le_bytes());
    f.extend_from_slice(&(PHDR as u16).to_le_bytes());
    f.extend_from_slice(&1u16.to_le_bytes()); // one program header
    f.extend_from_slice(&[0; 6]); // no section headers
    f.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    f.extend_from_slice(&5u32.to_le_bytes()); // PF_R | PF_X
    f.extend_from_slice(&0u64.to_le_bytes()); // p_offset
    f.extend_from_slice(&BASE.to_le_bytes()); // p_vaddr
    f.extend_from_slice(&BASE.to_le_bytes()); // p_paddr
    f.extend_from_slice(&size.to_le_bytes()); // p_filesz
    f.extend_from_slice(&size.to_le_bytes()); // p_memsz
    f.extend_from_slice(&0x1000u64.to_le_bytes()); // p_align
    f.extend_from_slice(code);
    f
}

/// The trampoline for the machine we run on.
pub(crate) fn program() -> Vec<u8> {
    if cfg!(target_arch = "aarch64") {
        elf(183, AARCH64)
    } else {
        elf(62, X86_64)
    }
}

/// A fresh sealed memfd holding the trampoline (close-on-exec): its contents, size and
/// executable bit cannot change. Made in the init for each sandbox.
pub(crate) fn memfd() -> Result<OwnedFd, String> {
    const MFD_EXEC: libc::c_uint = 0x10;
    const F_SEAL_EXEC: libc::c_int = 0x20;
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a valid C string and flags; MFD_EXEC (6.3+) says we mean to exec it, where
    // vm.memfd_noexec would otherwise make it non-executable; older kernels refuse the flag.
    let mut fd = unsafe { libc::memfd_create(c"polysandbox-exec".as_ptr(), flags | MFD_EXEC) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(c"polysandbox-exec".as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(format!("the exec trampoline: memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a new fd we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let code = program();
    // SAFETY: a write of our buffer to our memfd.
    if unsafe { libc::write(fd, code.as_ptr().cast(), code.len()) } != code.len() as isize {
        return Err(format!("the exec trampoline: write: {}", std::io::Error::last_os_error()));
    }
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on our memfd. F_SEAL_EXEC (6.3+: its mode's x bits fixed) where known.
    unsafe {
        if libc::fcntl(fd, libc::F_ADD_SEALS, seals | F_SEAL_EXEC) != 0
            && libc::fcntl(fd, libc::F_ADD_SEALS, seals) != 0
        {
            return Err(format!("the exec trampoline: seal: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes above are what the assembler makes of trampoline.s, where one is here.
    #[test]
    fn the_machine_code_is_the_assembled_source() {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sandbox/trampoline.s");
        let dir = std::env::temp_dir().join(format!("psb-trampoline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (arch, asm, objcopy, code) in [
            ("X86_64", "as", "objcopy", X86_64),
            ("AARCH64", "aarch64-linux-gnu-as", "aarch64-linux-gnu-objcopy", AARCH64),
        ] {
            let obj = dir.join(format!("{arch}.o"));
            let bin = dir.join(format!("{arch}.bin"));
            let ok = std::process::Command::new(asm)
                .args(["--defsym", &format!("{arch}=1"), "-o"])
                .arg(&obj)
                .arg(src)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                eprintln!("SKIPPED: the {arch} trampoline against its source: no {asm} here");
                continue;
            }
            let st = std::process::Command::new(objcopy)
                .args(["-O", "binary", "-j", ".text"])
                .arg(&obj)
                .arg(&bin)
                .status()
                .unwrap();
            assert!(st.success());
            assert_eq!(std::fs::read(&bin).unwrap(), code, "{arch}: the bytes differ from trampoline.s");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Run here, it execs what it is given, with the arguments and environment after it, and
    /// reports an exec that fails on fd 3 with exit 127.
    #[test]
    fn it_execs_its_first_argument_and_reports_a_failure() {
        use std::os::unix::fs::PermissionsExt;
        // Under qemu-user (the aarch64 unit tests on an x86_64 host) the kernel runs the
        // trampoline through binfmt_misc, which does not keep the argv[0] it is given.
        let kernel = std::fs::read_to_string("/proc/sys/kernel/arch").unwrap_or_default();
        if !kernel.trim().is_empty() && kernel.trim() != std::env::consts::ARCH {
            eprintln!(
                "SKIPPED: the trampoline run: a {} kernel runs this {} test emulated",
                kernel.trim(),
                std::env::consts::ARCH
            );
            return;
        }
        let dir = std::env::temp_dir().join(format!("psb-trampoline-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = dir.join("t");
        std::fs::write(&t, program()).unwrap();
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
        use std::os::unix::process::CommandExt;
        // As the init execs it: its argv[0] the path, then the command's argv.
        let out = std::process::Command::new(&t)
            .arg0("/bin/sh")
            .args(["sh", "-c", "echo \"$0 $1 $X\"", "zero", "one"])
            .env("X", "env")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "zero one env\n");
        assert!(out.status.success());
        // A missing program: its errno on fd 3, exit 127.
        let (r, w) = nix::unistd::pipe().unwrap();
        let w = std::os::fd::AsRawFd::as_raw_fd(&w);
        let mut c = std::process::Command::new(&t);
        c.arg0("/nonexistent").arg("x");
        // SAFETY: only dup2 between fork and exec.
        unsafe {
            c.pre_exec(move || {
                libc::dup2(w, 3);
                Ok(())
            });
        }
        let st = c.status().unwrap();
        drop(c);
        let mut errno = [0u8; 4];
        use std::io::Read;
        std::fs::File::from(r).read_exact(&mut errno).unwrap();
        assert_eq!(u32::from_le_bytes(errno), libc::ENOENT as u32);
        assert_eq!(st.code(), Some(127));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
