//! Process checks for tests that prove nothing outlives a kill or dispose:
//! reads `/proc` directly (Linux), no sleeps.

/// Parses whitespace-separated pids (as a test command echoes `$$ $!`).
///
/// # Panics
/// On a word that is not a pid: the test's own command printed it.
pub fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect()
}

/// `(state, pgrp)` of a live (possibly zombie) process, from /proc.
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether `pid` is still a running (non-zombie) process.
pub fn is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// Live (non-zombie) members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| matches!(proc_stat(*pid), Some((s, g)) if g == pgid && s != 'Z' && s != 'X'))
        .collect()
}

/// Live (non-zombie) processes named `comm` (as in `/proc/PID/comm`) whose
/// command line contains `needle`: finds a process a test started with a
/// marker argument (`sleep 300.4242`), not the test's own command line
/// that mentions it.
pub fn live_with(comm: &str, needle: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            is_alive(*pid)
                && std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == comm)
                && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
        })
        .collect()
}

/// Asserts, right now, that every pid in `pids` and every member of group
/// `pgid` is gone (or a zombie waiting for init to reap it).
///
/// # Panics
/// When a process survived, naming it.
pub fn assert_gone(pgid: i32, pids: &[i32]) {
    let alive: Vec<i32> = pids.iter().copied().filter(|p| is_alive(*p)).collect();
    let members = group_members(pgid);
    assert!(
        alive.is_empty() && members.is_empty(),
        "processes survived: pids {alive:?}, group {pgid} members {members:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_child_is_gone_after_wait() {
        assert!(is_alive(std::process::id() as i32));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!is_alive(pid));
        assert_eq!(pids(" 12 34\n"), [12, 34]);
    }
}
