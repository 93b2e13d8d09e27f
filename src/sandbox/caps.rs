//! Capability names and the set a command keeps: Docker's default set, changed by
//! `--cap-add`/`--cap-drop`. Every capability is held in the sandbox's own user namespace, so
//! it acts only on what that namespace owns (its mount, network, IPC and UTS namespaces, the
//! files its ids own), never on the host's.

/// Every capability by number (the index), as the kernel names them.
const NAMES: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

/// Docker's default capabilities, by number: what a command keeps unless told otherwise.
pub const DEFAULT: &[u32] = &[0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31];

/// The default set as a mask.
pub fn default_mask() -> u64 {
    DEFAULT.iter().fold(0, |m, c| m | (1u64 << c))
}

/// Capabilities no `--cap-add` may give, and why: each would let the command undo what holds
/// it in (the masks over /proc, `--protect`, read-only binds and `--read-only` are mounts its
/// own user namespace owns, which CAP_SYS_ADMIN there may unmount or remount writable).
const REFUSED: &[(&str, &str)] = &[(
    "SYS_ADMIN",
    "it would let the command unmount the masks over /proc and --protect's mounts, and remount read-only binds writable",
)];

/// The number of capability `name` (`NET_ADMIN`, `CAP_NET_ADMIN`, any case).
pub fn number(name: &str) -> Result<u32, String> {
    let upper = name.to_ascii_uppercase();
    let bare = upper.strip_prefix("CAP_").unwrap_or(&upper);
    NAMES
        .iter()
        .position(|n| *n == bare)
        .map(|i| i as u32)
        .ok_or_else(|| format!("unknown capability '{name}' (capabilities(7) names them, e.g. NET_ADMIN)"))
}

/// The kernel's name of capability `n`: `CAP_NET_ADMIN`.
pub fn name(n: u32) -> String {
    format!("CAP_{}", NAMES.get(n as usize).copied().unwrap_or("UNKNOWN"))
}

/// One `--cap-add` value: a capability that may be added, or `ALL` refused (it holds
/// SYS_ADMIN). For clap.
pub fn parse_add(s: &str) -> Result<String, String> {
    if s.eq_ignore_ascii_case("all") {
        return Err("refused: ALL includes SYS_ADMIN (name the capabilities to add)".into());
    }
    let n = number(s)?;
    let bare = &name(n)[4..];
    if let Some((_, why)) = REFUSED.iter().find(|(c, _)| *c == bare) {
        return Err(format!("refused: {why}"));
    }
    Ok(s.to_string())
}

/// One `--cap-drop` value: a capability, or `ALL`. For clap.
pub fn parse_drop(s: &str) -> Result<String, String> {
    if !s.eq_ignore_ascii_case("all") {
        number(s)?;
    }
    Ok(s.to_string())
}

/// The set a command keeps: Docker's default, less `drop` (`ALL` drops every one), plus
/// `add` (added after dropping, as podman does). Values are checked by [`parse_add`] and
/// [`parse_drop`].
pub fn mask(add: &[String], drop: &[String]) -> Result<u64, String> {
    let mut m = default_mask();
    for d in drop {
        if d.eq_ignore_ascii_case("all") {
            m = 0;
        } else {
            m &= !(1u64 << number(d)?);
        }
    }
    for a in add {
        parse_add(a)?;
        m |= 1u64 << number(a)?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_sets() {
        assert_eq!(number("net_admin").unwrap(), 12);
        assert_eq!(number("CAP_SYS_PTRACE").unwrap(), 19);
        assert_eq!(name(31), "CAP_SETFCAP");
        assert!(number("NOPE").is_err());
        let seccomp_names: Vec<String> = DEFAULT.iter().map(|&c| name(c)).collect();
        let mut want: Vec<String> = crate::seccomp::KEPT_CAPS.iter().map(|s| s.to_string()).collect();
        let mut got = seccomp_names.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want, "the seccomp module's list and this one agree");
        let m = mask(&["NET_ADMIN".into()], &["chown".into()]).unwrap();
        assert!(m & (1 << 12) != 0 && m & 1 == 0);
        assert_eq!(mask(&["KILL".into()], &["ALL".into()]).unwrap(), 1 << 5);
        assert!(parse_add("SYS_ADMIN").is_err() && parse_add("cap_sys_admin").is_err() && parse_add("all").is_err());
        assert!(parse_drop("all").is_ok() && parse_drop("bogus").is_err());
    }
}
