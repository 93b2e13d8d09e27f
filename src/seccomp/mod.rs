//! Seccomp: profiles in Docker's JSON format (so `--seccomp FILE` takes the profiles users
//! already have), compiled by us to classic BPF for x86_64 or aarch64.
//!
//! What the compiled program does, in order:
//! 1. a foreign architecture (i386 through `int 0x80`, arm32 compat) kills the process;
//! 2. on x86_64, x32 syscalls (bit 30 set) fail with EPERM;
//! 3. each syscall named by a rule that applies runs its rules, each argument compared at the
//!    width the kernel reads it (`abi.rs`: an `int` on its low 32 bits, so that garbage in the
//!    upper bits cannot sidestep a rule);
//! 4. a syscall number this build does not know (newer than its tables) fails with ENOSYS, so
//!    that libc falls back as it would on an older kernel;
//! 5. everything else takes the profile's default action (EPERM in ours).

mod abi;
mod bpf;

use serde::Deserialize;
use std::collections::BTreeMap;

pub use bpf::SockFilter;

/// The default profile, kept in `seccomp/default.json`.
pub const DEFAULT_PROFILE: &str = include_str!("../../seccomp/default.json");

/// The capabilities a sandboxed command keeps: Docker's default set. Profile entries that
/// `include` another capability do not apply; entries that `exclude` one of these do not apply.
pub const KEPT_CAPS: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    default_action: String,
    #[serde(default)]
    default_errno_ret: Option<u32>,
    #[serde(default)]
    syscalls: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    name: Option<String>,
    action: String,
    #[serde(default)]
    errno_ret: Option<u32>,
    #[serde(default)]
    args: Option<Vec<ArgCond>>,
    #[serde(default)]
    includes: Option<Filter>,
    #[serde(default)]
    excludes: Option<Filter>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct ArgCond {
    index: u32,
    value: u64,
    #[serde(default)]
    value_two: u64,
    op: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    arches: Option<Vec<String>>,
    #[serde(default)]
    caps: Option<Vec<String>>,
    #[serde(default)]
    min_kernel: Option<String>,
}

/// The architectures we compile for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    pub fn native() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Aarch64
        } else {
            Arch::X86_64
        }
    }
    fn audit(self) -> u32 {
        match self {
            Arch::X86_64 => 0xC000_003E,
            Arch::Aarch64 => 0xC000_00B7,
        }
    }
    fn names(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => &["amd64", "x86_64", "SCMP_ARCH_X86_64"],
            Arch::Aarch64 => &["arm64", "aarch64", "SCMP_ARCH_AARCH64"],
        }
    }
    fn lookup(self, name: &str) -> Option<u32> {
        abi::lookup(self, name)
    }
    /// Ranges of syscall numbers the tables know, merged.
    fn known_ranges(self) -> Vec<(u32, u32)> {
        let ids = abi::numbers(self);
        let mut out: Vec<(u32, u32)> = Vec::new();
        for id in ids {
            match out.last_mut() {
                Some((_, hi)) if *hi + 1 >= id => *hi = (*hi).max(id),
                _ => out.push((id, id)),
            }
        }
        out
    }
}

/// An action in seccomp's return-value encoding.
fn action(name: &str, errno: Option<u32>, default_errno: u32) -> Result<u32, String> {
    Ok(match name {
        "SCMP_ACT_ALLOW" => bpf::RET_ALLOW,
        "SCMP_ACT_ERRNO" => bpf::RET_ERRNO | (errno.unwrap_or(default_errno) & 0xffff),
        "SCMP_ACT_KILL" | "SCMP_ACT_KILL_THREAD" => bpf::RET_KILL_THREAD,
        "SCMP_ACT_KILL_PROCESS" => bpf::RET_KILL_PROCESS,
        "SCMP_ACT_TRAP" => bpf::RET_TRAP,
        "SCMP_ACT_LOG" => bpf::RET_LOG,
        other => return Err(format!("unsupported seccomp action '{other}'")),
    })
}

fn kernel_at_least(min: &str) -> bool {
    let parse = |s: &str| -> (u32, u32) {
        let mut it = s.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty());
        let a = it.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let b = it.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        (a, b)
    };
    let release = nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default();
    parse(&release) >= parse(min)
}

impl Rule {
    /// Whether the rule applies on `arch` to a command that keeps Docker's default capabilities.
    #[cfg(test)]
    fn applies(&self, arch: Arch) -> bool {
        let kept: Vec<String> = KEPT_CAPS.iter().map(|c| c.to_string()).collect();
        self.applies_with(arch, &kept)
    }

    /// Whether the rule applies on `arch` to a command that keeps the capabilities `kept`
    /// (`CAP_...` names): an `includes` of capabilities it does not keep, or an `excludes` of
    /// one it keeps, leaves the rule out.
    fn applies_with(&self, arch: Arch, kept: &[String]) -> bool {
        let arch_in = |list: &Vec<String>| list.iter().any(|a| arch.names().contains(&a.as_str()));
        let caps_kept = |list: &Vec<String>| list.iter().all(|c| kept.contains(c));
        if let Some(inc) = &self.includes {
            if inc.arches.as_ref().is_some_and(|a| !arch_in(a)) {
                return false;
            }
            if inc.caps.as_ref().is_some_and(|c| !caps_kept(c)) {
                return false;
            }
            if inc.min_kernel.as_ref().is_some_and(|k| !kernel_at_least(k)) {
                return false;
            }
        }
        if let Some(exc) = &self.excludes {
            if exc.arches.as_ref().is_some_and(arch_in) {
                return false;
            }
            if exc.caps.as_ref().is_some_and(|c| c.iter().any(|c| kept.contains(c))) {
                return false;
            }
        }
        true
    }
}

/// One argument condition of one syscall, at the width the kernel reads that argument.
#[derive(Debug, Clone)]
struct Cond {
    index: u32,
    bits: u32,
    op: String,
    value: u64,
    two: u64,
}

impl Cond {
    fn new(name: &str, c: &ArgCond) -> Result<Cond, String> {
        let bits = abi::arg_bits(name, c.index);
        let bad = |v: u64| {
            format!(
                "seccomp rule for {name}: argument {} is {bits} bits wide in the kernel, and {v:#x} does not fit",
                c.index
            )
        };
        // A mask wider than the argument masks nothing more; the values compared must fit.
        let value = if c.op == "SCMP_CMP_MASKED_EQ" {
            c.value & if bits == 64 { u64::MAX } else { (1 << bits) - 1 }
        } else {
            abi::fit(c.value, bits).ok_or_else(|| bad(c.value))?
        };
        let two = if c.op == "SCMP_CMP_MASKED_EQ" {
            abi::fit(c.value_two, bits).ok_or_else(|| bad(c.value_two))?
        } else {
            0
        };
        Ok(Cond { index: c.index, bits, op: c.op.clone(), value, two })
    }
}

/// A compiled filter, ready to install.
pub struct Program(pub Vec<SockFilter>);

/// Where a mode argument sits, per syscall that creates a file or changes its mode.
const MODE_ARGS: &[(&str, u32)] = &[
    ("chmod", 1),
    ("fchmod", 1),
    ("fchmodat", 2),
    ("fchmodat2", 2),
    ("creat", 1),
    ("open", 2),
    ("openat", 3),
    ("mknod", 1),
    ("mknodat", 2),
];

/// Rules that keep the command from making any file setuid or setgid (EPERM), placed before
/// the profile's own: used whenever the sandbox has a read-write bind, where such a file would
/// outlive the run on the host for any local user to execute (the bind itself is nosuid, the
/// host's view of the directory is not). `openat2` gets ENOSYS (its mode is behind a pointer,
/// which seccomp cannot read; libc falls back to openat). Existing setuid files still work.
fn no_setid_rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    for (name, index) in MODE_ARGS {
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            rules.push(deny(
                name,
                libc::EPERM,
                Some(vec![ArgCond {
                    index: *index,
                    value: bit as u64,
                    value_two: bit as u64,
                    op: "SCMP_CMP_MASKED_EQ".into(),
                }]),
            ));
        }
    }
    rules.push(deny("openat2", libc::ENOSYS, None));
    rules
}

/// Syscalls that act on another process named by pid (the argument at the index), which the
/// command may call on any process of its uid, the init included: lowering its rlimits (its
/// watchdog then cannot open /proc), renicing or rescheduling it (starving the watchdog),
/// moving its pages. Allowed on the caller itself (pid 0) only.
const OTHER_PROCESS: &[(&str, u32)] = &[
    ("prlimit64", 0),
    ("setpriority", 1),
    ("sched_setaffinity", 0),
    ("sched_setscheduler", 0),
    ("sched_setparam", 0),
    ("sched_setattr", 0),
    ("ioprio_set", 1),
    ("migrate_pages", 0),
    ("move_pages", 0),
];

fn deny(name: &str, errno: i32, args: Option<Vec<ArgCond>>) -> Rule {
    Rule {
        names: vec![name.into()],
        name: None,
        action: "SCMP_ACT_ERRNO".into(),
        errno_ret: Some(errno as u32),
        args,
        includes: None,
        excludes: None,
    }
}

/// What polysandbox adds in front of any profile (the default, the user's, or unconfined's
/// allow-all): rules that protect the host and the limits rather than restrict the command.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hardening {
    /// No setuid/setgid files ([`no_setid_rules`]): there is a read-write bind.
    pub no_setid: bool,
    /// No sched_setaffinity at all: `--cpus` is held by CPU affinity (no cgroup), which the
    /// command could otherwise widen. And no setsid: without a cgroup, what shares a CPU
    /// fairly between sandboxes is the scheduler's autogroup, one per session; a command that
    /// made a session per process (each an autogroup of equal weight) would take a CPU it
    /// shares with another sandbox almost whole.
    pub pin_affinity: bool,
    /// The capabilities the command keeps, as a mask (None: Docker's default set), against
    /// which the profile's `includes`/`excludes` of capabilities are read (`--cap-add`).
    pub caps: Option<u64>,
}

impl Hardening {
    fn rules(&self) -> Vec<Rule> {
        let mut rules = Vec::new();
        if self.pin_affinity {
            rules.push(deny("sched_setaffinity", libc::EPERM, None));
            rules.push(deny("setsid", libc::EPERM, None));
        }
        // Kernel budgets one sandbox could take whole from the host (docs/threat-model.md's
        // census): native AIO contexts count against `fs.aio-max-nr`, one counter for the whole
        // host with no per-sandbox bound. ENOSYS, as a kernel without AIO answers: libaio users
        // (InnoDB, fio, QEMU) fall back to their thread-based I/O; glibc's POSIX AIO uses threads.
        for name in HOST_BUDGET_CALLS {
            rules.push(deny(name, libc::ENOSYS, None));
        }
        for (name, index) in OTHER_PROCESS {
            rules.push(deny(
                name,
                libc::EPERM,
                Some(vec![ArgCond { index: *index, value: 0, value_two: 0, op: "SCMP_CMP_NE".into() }]),
            ));
        }
        if self.no_setid {
            rules.extend(no_setid_rules());
        }
        rules
    }
}

/// Calls denied whatever the profile (unconfined included): they draw on a budget the kernel
/// keeps for the whole host, which no cgroup, rlimit or namespace bounds per sandbox.
pub const HOST_BUDGET_CALLS: &[&str] = &["io_setup"];

/// A profile that allows everything: what `--seccomp unconfined` installs, under the
/// [`Hardening`] rules.
pub const ALLOW_ALL: &str = r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#;

/// Compiles a Docker-format JSON profile for `arch`, as it is.
pub fn compile(json: &str, arch: Arch) -> Result<Program, String> {
    compile_inner(json, arch, None)
}

/// Compiles a profile for `arch` with the [`Hardening`] rules in front of its own.
pub fn compile_hardened(json: &str, arch: Arch, h: Hardening) -> Result<Program, String> {
    compile_inner(json, arch, Some(h))
}

/// One syscall's rules: (conditions, action) pairs, in profile order.
type Alternatives = Vec<(Vec<Cond>, u32)>;

fn compile_inner(json: &str, arch: Arch, hardening: Option<Hardening>) -> Result<Program, String> {
    let mut profile: Profile = serde_json::from_str(json).map_err(|e| format!("invalid seccomp profile: {e}"))?;
    if let Some(h) = hardening {
        let mut rules = h.rules();
        rules.append(&mut profile.syscalls);
        profile.syscalls = rules;
    }
    let kept: Vec<String> = match hardening.and_then(|h| h.caps) {
        Some(mask) => (0..64).filter(|c| mask & (1u64 << c) != 0).map(crate::sandbox::caps::name).collect(),
        None => KEPT_CAPS.iter().map(|c| c.to_string()).collect(),
    };
    let default_errno = profile.default_errno_ret.unwrap_or(libc::EPERM as u32);
    let default = action(&profile.default_action, profile.default_errno_ret, default_errno)?;
    // syscall number -> alternatives (conditions, action), in profile order.
    let mut by_nr: BTreeMap<u32, Alternatives> = BTreeMap::new();
    for rule in &profile.syscalls {
        let act = action(&rule.action, rule.errno_ret, default_errno)?;
        if !rule.applies_with(arch, &kept) {
            continue;
        }
        let conds = rule.args.clone().unwrap_or_default();
        for c in &conds {
            if c.index > 5 {
                return Err(format!("seccomp rule argument index {} out of range 0..5", c.index));
            }
            bpf::check_op(&c.op)?;
        }
        for name in rule.names.iter().chain(rule.name.iter()) {
            // Names of other architectures (chown32, arch_prctl on arm64, ...) are skipped,
            // as libseccomp does.
            if let Some(nr) = arch.lookup(name) {
                let conds = conds.iter().map(|c| Cond::new(name, c)).collect::<Result<Vec<_>, _>>()?;
                by_nr.entry(nr).or_default().push((conds, act));
            }
        }
    }
    let mut asm = bpf::Asm::default();
    let native_arch = asm.label();
    asm.load(bpf::OFF_ARCH);
    asm.jeq(arch.audit(), Some(native_arch), None);
    asm.ret(bpf::RET_KILL_PROCESS);
    asm.bind(native_arch);
    asm.load(bpf::OFF_NR);
    if arch == Arch::X86_64 {
        let native = asm.label();
        asm.jge(0x4000_0000, None, Some(native));
        asm.ret(bpf::RET_ERRNO | libc::EPERM as u32);
        asm.bind(native);
    }
    // A binary search over the syscall numbers (so that neither the kernel's per-number cache
    // emulation at install time nor an uncached syscall walks the whole list), leaves of up
    // to four numbers, each jumping to its block. Syscalls whose only rule is unconditional
    // share one return per action.
    let miss = asm.label();
    let mut shared: BTreeMap<u32, bpf::Label> = BTreeMap::new();
    let mut blocks: Vec<(bpf::Label, &Alternatives)> = Vec::new();
    // Consecutive numbers with the same target merge into one range.
    let mut targets: Vec<(u32, u32, bpf::Label)> = Vec::new();
    for (nr, alternatives) in &by_nr {
        let label = match alternatives.as_slice() {
            [(conds, act)] if conds.is_empty() => *shared.entry(*act).or_insert_with(|| asm.label()),
            _ => {
                let l = asm.label();
                blocks.push((l, alternatives));
                l
            }
        };
        match targets.last_mut() {
            Some((_, hi, l)) if *hi + 1 == *nr && l.same(&label) => *hi = *nr,
            _ => targets.push((*nr, *nr, label)),
        }
    }
    search(&mut asm, &targets, miss);
    for (label, alternatives) in blocks {
        asm.bind(label);
        for (conds, act) in alternatives {
            let next = asm.label();
            for c in conds {
                asm.arg_cond(c.index, c.bits, &c.op, c.value, c.two, next)?;
            }
            asm.ret(*act);
            asm.bind(next);
        }
        asm.ret(default);
    }
    for (act, label) in shared {
        asm.bind(label);
        asm.ret(act);
    }
    // Unknown numbers: gaps between the known ranges and anything past the last one.
    asm.bind(miss);
    let enosys = asm.label();
    let ranges = arch.known_ranges();
    let mut prev_hi: Option<u32> = None;
    for (lo, hi) in &ranges {
        if let Some(p) = prev_hi {
            if *lo > p + 1 {
                // p < nr < lo  ->  ENOSYS
                let skip = asm.label();
                asm.jgt(p, None, Some(skip));
                asm.jge(*lo, Some(skip), Some(enosys));
                asm.bind(skip);
            }
        }
        prev_hi = Some(*hi);
    }
    if let Some(p) = prev_hi {
        asm.jgt(p, Some(enosys), None);
    }
    asm.ret(default);
    asm.bind(enosys);
    asm.ret(bpf::RET_ERRNO | libc::ENOSYS as u32);
    Ok(Program(asm.finish()?))
}

/// Emits a binary search for the syscall number (in A) over sorted, disjoint ranges
/// `(lo, hi, label)`, jumping to the matching label or to `miss`.
fn search(asm: &mut bpf::Asm, ranges: &[(u32, u32, bpf::Label)], miss: bpf::Label) {
    if ranges.len() <= 3 {
        let leaf_miss = asm.label();
        for (lo, hi, label) in ranges {
            let next = asm.label();
            if lo == hi {
                asm.jeq(*lo, None, Some(next));
            } else {
                asm.jgt(*hi, Some(next), None);
                asm.jge(*lo, None, Some(leaf_miss));
            }
            asm.ja(*label);
            asm.bind(next);
        }
        asm.bind(leaf_miss);
        asm.ja(miss);
        return;
    }
    let mid = ranges.len() / 2;
    let (left, right) = ranges.split_at(mid);
    let right_label = asm.label();
    let go_left = asm.label();
    asm.jge(right[0].0, None, Some(go_left));
    asm.ja(right_label);
    asm.bind(go_left);
    search(asm, left, miss);
    asm.bind(right_label);
    search(asm, right, miss);
}

impl Program {
    /// The program as the kernel reads it (8 bytes an instruction, native byte order), to
    /// hand to another process.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() * 8);
        for f in &self.0 {
            out.extend_from_slice(&f.code.to_ne_bytes());
            out.extend_from_slice(&[f.jt, f.jf]);
            out.extend_from_slice(&f.k.to_ne_bytes());
        }
        out
    }

    /// The inverse of [`Program::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> Option<Program> {
        if b.is_empty() || b.len() % 8 != 0 {
            return None;
        }
        let insns = b
            .chunks_exact(8)
            .map(|c| SockFilter {
                code: u16::from_ne_bytes([c[0], c[1]]),
                jt: c[2],
                jf: c[3],
                k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect();
        Some(Program(insns))
    }

    /// Installs the filter on the calling thread. Needs no_new_privs (or CAP_SYS_ADMIN).
    pub fn install(&self) -> std::io::Result<()> {
        let prog = libc::sock_fprog { len: self.0.len() as u16, filter: self.0.as_ptr() as *mut libc::sock_filter };
        // SAFETY: prog points at a valid, live filter of `len` instructions.
        let r = unsafe {
            libc::syscall(libc::SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &prog as *const libc::sock_fprog)
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_profile_compiles_for_both_arches() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = compile(DEFAULT_PROFILE, arch).unwrap();
            assert!(p.0.len() > 50 && p.0.len() < 1024, "{arch:?}: {} insns", p.0.len());
            eprintln!("{arch:?}: {} BPF instructions", p.0.len());
        }
    }

    #[test]
    fn every_default_name_is_known_somewhere() {
        let profile: Profile = serde_json::from_str(DEFAULT_PROFILE).unwrap();
        // Names that exist only on 32-bit or other architectures, as in Docker's profile.
        for rule in &profile.syscalls {
            for n in &rule.names {
                let known = Arch::X86_64.lookup(n).is_some()
                    || Arch::Aarch64.lookup(n).is_some()
                    || n.ends_with("32")
                    || n.ends_with("64")
                    || n.ends_with("_time64")
                    || [
                        "_llseek",
                        "_newselect",
                        "ipc",
                        "mmap2",
                        "sigprocmask",
                        "sigreturn",
                        "socketcall",
                        "send",
                        "recv",
                        "waitpid",
                        "breakpoint",
                        "cacheflush",
                        "set_tls",
                        "arm_fadvise64_64",
                        "arm_sync_file_range",
                        "sync_file_range2",
                        "stime",
                        "time",
                        "umount",
                        "ugetrlimit",
                        "utime",
                        "alarm",
                        "signalfd",
                        "pause",
                        "epoll_ctl_old",
                        "epoll_wait_old",
                    ]
                    .contains(&n.as_str());
                assert!(known, "unknown syscall name in default profile: {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_profiles() {
        assert!(compile("{", Arch::X86_64).is_err());
        assert!(compile(r#"{"defaultAction":"SCMP_ACT_NOPE"}"#, Arch::X86_64).is_err());
        assert!(compile(
            r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":9,"value":0,"op":"SCMP_CMP_EQ"}]}]}"#,
            Arch::X86_64
        )
        .is_err());
    }

    /// Runs the compiled program through a small BPF interpreter, so the decision for a given
    /// syscall can be checked without installing it.
    fn decide(p: &Program, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        bpf::interpret(&p.0, arch, nr, args)
    }

    /// The decision the profile means, computed directly from its rules as the kernel reads the
    /// arguments (each truncated to its declared width).
    fn reference(json: &str, arch: Arch, nr: u32, args: [u64; 6]) -> u32 {
        let profile: Profile = serde_json::from_str(json).unwrap();
        let default_errno = profile.default_errno_ret.unwrap_or(1);
        let default = action(&profile.default_action, profile.default_errno_ret, default_errno).unwrap();
        if arch == Arch::X86_64 && nr >= 0x4000_0000 {
            return bpf::RET_ERRNO | 1;
        }
        let known = arch.known_ranges().iter().any(|(lo, hi)| (*lo..=*hi).contains(&nr));
        let mut matched_any_rule = false;
        for rule in profile.syscalls.iter().filter(|r| r.applies(arch)) {
            let Some(name) = rule.names.iter().find(|n| arch.lookup(n) == Some(nr)) else { continue };
            matched_any_rule = true;
            let holds = rule.args.clone().unwrap_or_default().iter().all(|c| {
                let bits = abi::arg_bits(name, c.index);
                let w = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
                let (a, v, v2) = (args[c.index as usize] & w, c.value & w, c.value_two & w);
                match c.op.as_str() {
                    "SCMP_CMP_EQ" => a == v,
                    "SCMP_CMP_NE" => a != v,
                    "SCMP_CMP_MASKED_EQ" => a & v == v2,
                    "SCMP_CMP_GT" => a > v,
                    "SCMP_CMP_GE" => a >= v,
                    "SCMP_CMP_LT" => a < v,
                    "SCMP_CMP_LE" => a <= v,
                    _ => unreachable!(),
                }
            });
            if holds {
                return action(&rule.action, rule.errno_ret, default_errno).unwrap();
            }
        }
        if !matched_any_rule && !known {
            return bpf::RET_ERRNO | libc::ENOSYS as u32;
        }
        default
    }

    #[test]
    fn compiled_program_agrees_with_the_rules_for_every_number() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = compile(DEFAULT_PROFILE, arch).unwrap();
            let arg_sets: [[u64; 6]; 4] =
                [[0; 6], [0x1000_0000, 0x5412, 0, 0, 0, 0], [40, 8, 0, 0, 0, 0], [u64::MAX; 6]];
            for nr in 0..1100u32 {
                for args in arg_sets {
                    assert_eq!(
                        decide(&p, arch.audit(), nr, args),
                        reference(DEFAULT_PROFILE, arch, nr, args),
                        "{arch:?} syscall {nr} args {args:x?}"
                    );
                }
            }
        }
    }

    #[test]
    fn program_bytes_round_trip() {
        let p = compile(DEFAULT_PROFILE, Arch::native()).unwrap();
        let q = Program::from_bytes(&p.to_bytes()).unwrap();
        assert_eq!(p.0.len(), q.0.len());
        assert!(p.0.iter().zip(&q.0).all(|(a, b)| (a.code, a.jt, a.jf, a.k) == (b.code, b.jt, b.jf, b.k)));
        assert!(Program::from_bytes(&[0u8; 7]).is_none());
        assert!(Program::from_bytes(&[]).is_none());
    }

    #[test]
    fn decisions() {
        let p = compile(DEFAULT_PROFILE, Arch::X86_64).unwrap();
        let a = Arch::X86_64.audit();
        let nr = |n: &str| Arch::X86_64.lookup(n).unwrap();
        let eperm = bpf::RET_ERRNO | libc::EPERM as u32;
        assert_eq!(decide(&p, a, nr("read"), [0; 6]), bpf::RET_ALLOW);
        assert_eq!(decide(&p, a, nr("mount"), [0; 6]), eperm);
        assert_eq!(decide(&p, a, nr("bpf"), [0; 6]), eperm);
        assert_eq!(decide(&p, a, nr("keyctl"), [0; 6]), eperm);
        assert_eq!(decide(&p, a, nr("ptrace"), [0; 6]), eperm);
        assert_eq!(decide(&p, a, nr("unshare"), [0; 6]), eperm);
        // clone: threads allowed, a new user namespace is not.
        assert_eq!(decide(&p, a, nr("clone"), [0x3d0f00, 0, 0, 0, 0, 0]), bpf::RET_ALLOW);
        assert_eq!(decide(&p, a, nr("clone"), [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0]), eperm);
        // clone3 gets ENOSYS so that glibc falls back to clone.
        assert_eq!(decide(&p, a, nr("clone3"), [0; 6]), bpf::RET_ERRNO | libc::ENOSYS as u32);
        // TIOCSTI is refused, also with garbage in the upper half of the argument.
        assert_eq!(decide(&p, a, nr("ioctl"), [1, 0x5412, 0, 0, 0, 0]), eperm);
        assert_eq!(decide(&p, a, nr("ioctl"), [1, 0x1_0000_5412, 0, 0, 0, 0]), eperm);
        assert_eq!(decide(&p, a, nr("ioctl"), [1, 0x5401, 0, 0, 0, 0]), bpf::RET_ALLOW);
        // personality: only the harmless values.
        assert_eq!(decide(&p, a, nr("personality"), [0; 6]), bpf::RET_ALLOW);
        assert_eq!(decide(&p, a, nr("personality"), [0x0040000, 0, 0, 0, 0, 0]), eperm);
        // Unknown numbers: ENOSYS; x32 and foreign arches: denied.
        assert_eq!(decide(&p, a, 1000, [0; 6]), bpf::RET_ERRNO | libc::ENOSYS as u32);
        assert_eq!(decide(&p, a, 0x4000_0000 | nr("read"), [0; 6]), eperm);
        assert_eq!(decide(&p, 0x4000_0003 /* i386 */, 3, [0; 6]), bpf::RET_KILL_PROCESS);
        // The aarch64 program uses aarch64 numbers.
        let q = compile(DEFAULT_PROFILE, Arch::Aarch64).unwrap();
        let b = Arch::Aarch64.audit();
        assert_eq!(decide(&q, b, 63 /* read */, [0; 6]), bpf::RET_ALLOW);
        assert_eq!(decide(&q, b, 40 /* mount */, [0; 6]), eperm);
        assert_eq!(decide(&q, a, 63, [0; 6]), bpf::RET_KILL_PROCESS);
    }

    /// A profile's rules that include a capability apply when the command keeps it
    /// (`--cap-add`), and those that exclude one when it does not (`--cap-drop`).
    #[test]
    fn capability_conditions_follow_the_kept_set() {
        let profile = r#"{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
            {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_PTRACE"]}},
            {"names": ["chroot"], "action": "SCMP_ACT_ALLOW", "excludes": {"caps": ["CAP_SYS_CHROOT"]}}]}"#;
        let arch = Arch::X86_64;
        let nr = |n: &str| arch.lookup(n).unwrap();
        let with = |caps: Option<u64>| {
            let h = Hardening { no_setid: false, pin_affinity: false, caps };
            compile_hardened(profile, arch, h).unwrap()
        };
        let default = with(None);
        assert_ne!(decide(&default, arch.audit(), nr("ptrace"), [0; 6]), bpf::RET_ALLOW);
        assert_ne!(decide(&default, arch.audit(), nr("chroot"), [0; 6]), bpf::RET_ALLOW);
        let changed = with(Some((crate::sandbox::caps::default_mask() | 1 << 19) & !(1 << 18)));
        assert_eq!(decide(&changed, arch.audit(), nr("ptrace"), [0; 6]), bpf::RET_ALLOW);
        assert_eq!(decide(&changed, arch.audit(), nr("chroot"), [0; 6]), bpf::RET_ALLOW);
    }

    /// Every argument a rule of the default profile compares, with garbage in the bits above
    /// the argument's kernel width: the decision must be the one for the clean value, on both
    /// architectures (the kernel ignores those bits, so must the filter).
    #[test]
    fn upper_argument_bits_never_change_a_decision() {
        let profile: Profile = serde_json::from_str(DEFAULT_PROFILE).unwrap();
        let mut checked = 0;
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = compile(DEFAULT_PROFILE, arch).unwrap();
            for rule in profile.syscalls.iter().filter(|r| r.applies(arch)) {
                for c in rule.args.iter().flatten() {
                    for name in &rule.names {
                        let Some(nr) = arch.lookup(name) else { continue };
                        let bits = abi::arg_bits(name, c.index);
                        if bits == 64 {
                            continue;
                        }
                        let w = (1u64 << bits) - 1;
                        for clean in [c.value & w, c.value_two & w, (c.value & w) ^ 1, 0] {
                            let mut args = [0u64; 6];
                            args[c.index as usize] = clean;
                            let want = decide(&p, arch.audit(), nr, args);
                            for garbage in [1u64 << bits, 0xffff_ffff_0000_0000 & !w, !w] {
                                args[c.index as usize] = clean | garbage;
                                assert_eq!(
                                    decide(&p, arch.audit(), nr, args),
                                    want,
                                    "{arch:?} {name} arg {} = {:#x}",
                                    c.index,
                                    clean | garbage
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 50, "only {checked} variants checked");
        // The case that got through: AF_VSOCK (40) with a bit set above the int.
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let p = compile(DEFAULT_PROFILE, arch).unwrap();
            let socket = arch.lookup("socket").unwrap();
            let eperm = bpf::RET_ERRNO | libc::EPERM as u32;
            assert_eq!(decide(&p, arch.audit(), socket, [40, 1, 0, 0, 0, 0]), eperm);
            assert_eq!(decide(&p, arch.audit(), socket, [0x1_0000_0028, 1, 0, 0, 0, 0]), eperm, "{arch:?}");
            assert_eq!(decide(&p, arch.audit(), socket, [0xffff_ffff_0000_0028, 1, 0, 0, 0, 0]), eperm, "{arch:?}");
            assert_eq!(decide(&p, arch.audit(), socket, [2, 1, 0, 0, 0, 0]), bpf::RET_ALLOW);
            // personality(0xffffffff) queries; the same with upper garbage is the same query.
            let pers = arch.lookup("personality").unwrap();
            assert_eq!(decide(&p, arch.audit(), pers, [0x7_ffff_ffff, 0, 0, 0, 0, 0]), bpf::RET_ALLOW);
            assert_eq!(decide(&p, arch.audit(), pers, [0x1_0040_0000, 0, 0, 0, 0, 0]), eperm);
        }
    }

    #[test]
    fn a_value_the_kernel_could_never_see_is_refused() {
        let json = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["socket"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":4294967336,"op":"SCMP_CMP_EQ"}]}]}"#;
        let e = compile(json, Arch::X86_64).err().unwrap();
        assert!(e.contains("32 bits wide"), "{e}");
        // Sign-extended negatives are the same int: accepted.
        let json = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["openat"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":18446744073709551516,"op":"SCMP_CMP_EQ"}]}]}"#;
        let p = compile(json, Arch::X86_64).unwrap();
        let nr = Arch::X86_64.lookup("openat").unwrap();
        assert_eq!(decide(&p, Arch::X86_64.audit(), nr, [0xffff_ff9c, 0, 0, 0, 0, 0]), bpf::RET_ALLOW);
    }

    /// aarch64 has none of the legacy calls: each has a replacement libc uses there instead.
    const AARCH64_FORM: &[(&str, &[&str])] = &[
        ("open", &["openat"]),
        ("creat", &["openat"]),
        ("stat", &["newfstatat"]),
        ("lstat", &["newfstatat"]),
        ("chmod", &["fchmodat"]),
        ("chown", &["fchownat"]),
        ("lchown", &["fchownat"]),
        ("access", &["faccessat"]),
        ("dup2", &["dup3"]),
        ("epoll_create", &["epoll_create1"]),
        ("epoll_wait", &["epoll_pwait"]),
        ("eventfd", &["eventfd2"]),
        ("fork", &["clone"]),
        ("vfork", &["clone"]),
        ("inotify_init", &["inotify_init1"]),
        ("link", &["linkat"]),
        ("mkdir", &["mkdirat"]),
        ("mknod", &["mknodat"]),
        ("pipe", &["pipe2"]),
        ("poll", &["ppoll"]),
        ("readlink", &["readlinkat"]),
        ("rename", &["renameat", "renameat2"]),
        ("rmdir", &["unlinkat"]),
        ("unlink", &["unlinkat"]),
        ("symlink", &["symlinkat"]),
        ("utime", &["utimensat"]),
        ("utimes", &["utimensat"]),
        ("futimesat", &["utimensat"]),
        ("select", &["pselect6"]),
        ("pause", &["ppoll"]),
        ("signalfd", &["signalfd4"]),
        ("time", &["clock_gettime"]),
        ("alarm", &["setitimer"]),
        ("getdents", &["getdents64"]),
        ("getpgrp", &["getpgid"]),
    ];

    /// The default profile is right on aarch64 by construction: everything allowed on x86_64
    /// is allowed on aarch64 (the same syscall, or the form that replaces a legacy one there),
    /// and a syscall both have gets the same decision on both for every argument tried.
    #[test]
    fn aarch64_allows_exactly_what_x86_64_allows() {
        let x = compile(DEFAULT_PROFILE, Arch::X86_64).unwrap();
        let a = compile(DEFAULT_PROFILE, Arch::Aarch64).unwrap();
        let on = |p: &Program, arch: Arch, name: &str, args: [u64; 6]| {
            decide(p, arch.audit(), arch.lookup(name).unwrap(), args)
        };
        let arg_sets: [[u64; 6]; 6] = [
            [0; 6],
            [2, 1, 0, 0, 0, 0],
            [40, 8, 0, 0, 0, 0],
            [1, 0x5412, 0, 0, 0, 0],
            [0x1_0000_0028, 0x10000, 0, 0, 0, 0],
            [u64::MAX; 6],
        ];
        let a_names = abi::names(Arch::Aarch64);
        let mut compared = 0;
        for name in abi::names(Arch::X86_64) {
            if a_names.contains(&name) {
                for args in arg_sets {
                    assert_eq!(
                        on(&x, Arch::X86_64, &name, args),
                        on(&a, Arch::Aarch64, &name, args),
                        "{name} {args:x?}"
                    );
                }
                compared += 1;
            } else if on(&x, Arch::X86_64, &name, [0; 6]) == bpf::RET_ALLOW {
                let Some((_, forms)) = AARCH64_FORM.iter().find(|(n, _)| *n == name) else {
                    // x86-only machinery with no arm64 counterpart.
                    assert!(
                        [
                            "arch_prctl",
                            "modify_ldt",
                            "iopl",
                            "ioperm",
                            "get_thread_area",
                            "set_thread_area",
                            "epoll_ctl_old",
                            "epoll_wait_old",
                            "uretprobe",
                            "uprobe"
                        ]
                        .contains(&name.as_str()),
                        "{name} is allowed on x86_64 and has no aarch64 form listed"
                    );
                    continue;
                };
                for f in *forms {
                    assert_eq!(
                        on(&a, Arch::Aarch64, f, [0; 6]),
                        bpf::RET_ALLOW,
                        "{name} is allowed on x86_64, its aarch64 form {f} is not"
                    );
                }
            }
        }
        assert!(compared > 250, "{compared}");
        // Every aarch64 name is an x86_64 name too: nothing arm64-only can slip by unchecked
        // (the arm-specific ones the profile allows are named here).
        for name in &a_names {
            if abi::names(Arch::X86_64).contains(name) {
                continue;
            }
            let d = on(&a, Arch::Aarch64, name, [0; 6]);
            assert!(
                d != bpf::RET_ALLOW || ["sync_file_range2"].contains(&name.as_str()),
                "{name} allowed only on aarch64"
            );
        }
    }

    #[test]
    fn no_setid_rules_refuse_setuid_and_setgid_modes_only() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            for base in [DEFAULT_PROFILE, ALLOW_ALL] {
                let p = compile_hardened(base, arch, Hardening { no_setid: true, pin_affinity: false, caps: None })
                    .unwrap();
                let eperm = bpf::RET_ERRNO | libc::EPERM as u32;
                let at = |name: &str, idx: usize, mode: u64| {
                    let mut args = [0u64; 6];
                    args[idx] = mode;
                    decide(&p, arch.audit(), arch.lookup(name).unwrap(), args)
                };
                for (name, idx) in MODE_ARGS {
                    if arch.lookup(name).is_none() {
                        continue;
                    }
                    let idx = *idx as usize;
                    assert_eq!(at(name, idx, 0o4755), eperm, "{arch:?} {name}");
                    assert_eq!(at(name, idx, 0o2755), eperm, "{arch:?} {name}");
                    // Upper garbage above the 16-bit umode_t does not hide the bits.
                    assert_eq!(at(name, idx, 0xffff_0000_0000_0000 | 0o4755), eperm, "{arch:?} {name}");
                    assert_ne!(at(name, idx, 0o755), eperm, "{arch:?} {name}");
                    assert_ne!(at(name, idx, 0o1777), eperm, "{arch:?} {name}");
                }
                assert_eq!(
                    decide(&p, arch.audit(), arch.lookup("openat2").unwrap(), [0; 6]),
                    bpf::RET_ERRNO | libc::ENOSYS as u32
                );
            }
        }
        // Without it, a setuid chmod is as the profile says.
        let p = compile(DEFAULT_PROFILE, Arch::X86_64).unwrap();
        assert_eq!(
            decide(&p, Arch::X86_64.audit(), Arch::X86_64.lookup("chmod").unwrap(), [0, 0o4755, 0, 0, 0, 0]),
            bpf::RET_ALLOW
        );
    }

    #[test]
    fn other_processes_are_out_of_reach_and_affinity_can_be_pinned() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let eperm = bpf::RET_ERRNO | libc::EPERM as u32;
            let base = compile(DEFAULT_PROFILE, arch).unwrap();
            for pin in [false, true] {
                let p = compile_hardened(
                    DEFAULT_PROFILE,
                    arch,
                    Hardening { no_setid: false, pin_affinity: pin, caps: None },
                )
                .unwrap();
                let call = |name: &str, idx: usize, v: u64| {
                    let mut args = [0u64; 6];
                    args[idx] = v;
                    decide(&p, arch.audit(), arch.lookup(name).unwrap(), args)
                };
                for (name, idx) in OTHER_PROCESS {
                    let idx = *idx as usize;
                    assert!(arch.lookup(name).is_some(), "{arch:?} has no {name}");
                    assert_eq!(call(name, idx, 1), eperm, "{arch:?} {name} on pid 1");
                    // A pid_t with upper garbage is the same pid 1.
                    assert_eq!(call(name, idx, 0xffff_ffff_0000_0001), eperm, "{arch:?} {name}");
                    if *name != "sched_setaffinity" || !pin {
                        // On itself: whatever the profile says.
                        let mut args = [0u64; 6];
                        args[idx] = 0;
                        assert_eq!(
                            call(name, idx, 0),
                            decide(&base, arch.audit(), arch.lookup(name).unwrap(), args),
                            "{arch:?} {name} on itself"
                        );
                    }
                }
                assert_eq!(call("sched_setaffinity", 0, 0) == eperm, pin, "{arch:?} pin {pin}");
                assert_eq!(call("setsid", 0, 0) == eperm, pin, "{arch:?} setsid, pin {pin}");
                // The setid rules are not there without a read-write bind.
                assert_eq!(call("fchmodat", 2, 0o4755), bpf::RET_ALLOW);
            }
        }
    }
}
