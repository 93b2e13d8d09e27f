//! What the host must allow before a sandbox can start, checked before any work: user
//! namespaces (an error, naming the setting that forbids them and how to allow them), and a
//! cgroup for the limits when rootless (a note: limits then fall back, see docs/sandbox.md).

use std::path::Path;

/// One sysctl under `sys` (`/proc/sys`), e.g. `user/max_user_namespaces`; None when the kernel
/// has no such setting (or it cannot be read).
fn sysctl(sys: &Path, name: &str) -> Option<i64> {
    std::fs::read_to_string(sys.join(name)).ok()?.trim().parse().ok()
}

/// What forbids creating the user namespaces every sandbox needs, from the sysctls under `sys`,
/// and how to allow them: None when nothing there does. `root`: the caller has CAP_SYS_ADMIN
/// (which the unprivileged-only settings do not bind); `confined`: an AppArmor profile applies
/// to the process (one that allows `userns` lifts Ubuntu's restriction, and which profile it
/// is cannot be told from here).
pub(crate) fn userns_forbidden(sys: &Path, root: bool, confined: bool) -> Option<String> {
    if sysctl(sys, "user/max_user_namespaces") == Some(0) {
        return Some(
            "user namespaces are disabled on this host (user.max_user_namespaces=0), and every sandbox needs one: \
             allow them, as root, with `sysctl -w user.max_user_namespaces=65536` (and the same line in /etc/sysctl.d/ to keep it)"
                .into(),
        );
    }
    if root {
        return None;
    }
    if sysctl(sys, "kernel/unprivileged_userns_clone") == Some(0) {
        return Some(
            "unprivileged user namespaces are disabled on this host (kernel.unprivileged_userns_clone=0), and a rootless sandbox needs one: \
             allow them, as root, with `sysctl -w kernel.unprivileged_userns_clone=1` (and in /etc/sysctl.d/ to keep it), or run polysandbox as root"
                .into(),
        );
    }
    if sysctl(sys, "kernel/apparmor_restrict_unprivileged_userns") == Some(1) && !confined {
        return Some(
            "AppArmor restricts unprivileged user namespaces on this host (kernel.apparmor_restrict_unprivileged_userns=1), and a rootless sandbox needs one: \
             give the polysandbox binary an AppArmor profile that allows them (`profile polysandbox /path/to/polysandbox flags=(unconfined) { userns, }` \
             in /etc/apparmor.d/polysandbox, then `apparmor_parser -r /etc/apparmor.d/polysandbox`), \
             or, as root, `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
                .into(),
        );
    }
    None
}

/// Whether an AppArmor profile confines this process: `/proc/self/attr/apparmor/current` (or the
/// older `/proc/self/attr/current`) says something other than `unconfined`. No AppArmor: false.
fn apparmor_confined() -> bool {
    ["/proc/self/attr/apparmor/current", "/proc/self/attr/current"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|label| {
            let label = label.trim_end_matches(['\0', '\n']).trim();
            !label.is_empty() && label != "unconfined"
        })
}

/// Root of the initial user namespace, whom the unprivileged-only settings do not bind (root
/// of another one, a rootless container's, is bound by them, as the sandbox treats it).
fn is_root() -> bool {
    crate::sandbox::host_root()
}

/// The user-namespace check on this host: `Err` is the one line to print.
pub(crate) fn check_user_namespaces() -> Result<(), String> {
    match userns_forbidden(Path::new("/proc/sys"), is_root(), apparmor_confined()) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// A note for a rootless user with no cgroup delegated: the limits fall back, and how to get
/// one. None as root, or with a delegated cgroup v2 subtree.
pub(crate) fn cgroup_note() -> Option<String> {
    if is_root() {
        return None;
    }
    let why = crate::cgroups::rootless_delegation().err()?;
    Some(format!(
        "no cgroup for the limits ({}): memory, pids and CPU are held by rlimits and a watchdog instead (docs/sandbox.md); \
         for cgroup limits, run it under `systemd-run --user --scope -p Delegate=yes polysandbox ...`",
        why.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /proc/sys of its own, with these settings.
    fn sys(name: &str, settings: &[(&str, &str)]) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("psb-sysctl-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (k, v) in settings {
            let p = d.join(k);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{v}\n")).unwrap();
        }
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Each setting that forbids user namespaces is named with its fix, for the callers it
    /// binds: max_user_namespaces everyone, the other two the unprivileged (AppArmor's only
    /// for an unconfined process).
    #[test]
    fn each_setting_that_forbids_user_namespaces_is_named_with_its_fix() {
        let allowed = sys(
            "allowed",
            &[
                ("user/max_user_namespaces", "96365"),
                ("kernel/unprivileged_userns_clone", "1"),
                ("kernel/apparmor_restrict_unprivileged_userns", "0"),
            ],
        );
        let none = sys("none", &[]);
        for root in [true, false] {
            assert_eq!(userns_forbidden(&allowed, root, false), None);
            assert_eq!(userns_forbidden(&none, root, false), None, "a kernel without these settings");
        }
        let max0 = sys("max0", &[("user/max_user_namespaces", "0"), ("kernel/unprivileged_userns_clone", "1")]);
        for root in [true, false] {
            let e = userns_forbidden(&max0, root, true).unwrap();
            assert!(
                e.contains("user.max_user_namespaces=0") && e.contains("sysctl -w user.max_user_namespaces="),
                "{e}"
            );
        }
        let debian = sys("debian", &[("user/max_user_namespaces", "100"), ("kernel/unprivileged_userns_clone", "0")]);
        assert_eq!(userns_forbidden(&debian, true, false), None);
        let e = userns_forbidden(&debian, false, false).unwrap();
        assert!(
            e.contains("kernel.unprivileged_userns_clone=0")
                && e.contains("sysctl -w kernel.unprivileged_userns_clone=1"),
            "{e}"
        );
        let ubuntu = sys("ubuntu", &[("kernel/apparmor_restrict_unprivileged_userns", "1")]);
        assert_eq!(userns_forbidden(&ubuntu, true, false), None);
        assert_eq!(userns_forbidden(&ubuntu, false, true), None, "a profile of its own may allow them");
        let e = userns_forbidden(&ubuntu, false, false).unwrap();
        assert!(
            e.contains("apparmor_restrict_unprivileged_userns=1")
                && e.contains("userns,")
                && e.contains("apparmor_parser"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        for d in [allowed, none, max0, debian, ubuntu] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
