//! The bash sandbox (Linux): what a confined command cannot do (write outside
//! the workspace by any path, reach the network, see the host's processes,
//! gain privileges, outlive its call), what it still can (build, commit, run
//! python, pipe and redirect), and the configuration's checks. Each hostile
//! case also runs unconfined where that is safe, to show the test can fail.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::common::*;
use ferrule::agent::AgentBuilder;
use serde_json::{json, Value};

/// Runs `command` with bash in `dir` under `sandbox` (the `builtin_tools.sandbox`
/// value; null leaves it out), returning the output and whether it failed.
fn bash_in(dir: &Path, command: &str, sandbox: Value) -> (String, bool) {
    let mut builtins = json!({"working_directory": dir.to_str().unwrap(), "allowed": ["bash"]});
    if !sandbox.is_null() {
        builtins["sandbox"] = sandbox;
    }
    let script =
        json!([{"tool_calls": [call("b", "bash", json!({"command": command, "timeout": 60}))]}, {"text": "done"}]);
    let agent = agent(script, json!({"builtin_tools": builtins}), vec![]);
    let (result, _) = run(&agent, "go");
    let message = &tool_results(&result)[0];
    (text(message), message["is_error"].as_bool().unwrap())
}

/// The default sandbox: the workspace writable, no network.
fn confined(dir: &Path, command: &str) -> (String, bool) {
    bash_in(dir, command, json!({"mode": "workspace_write"}))
}

fn unconfined(dir: &Path, command: &str) -> (String, bool) {
    bash_in(dir, command, json!({"mode": "off"}))
}

/// A directory outside the workspace, and a file in it.
fn outside() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("precious.txt");
    std::fs::write(&file, "precious").unwrap();
    (dir, file)
}

#[test]
fn writes_outside_the_workspace_are_refused_by_every_path() {
    let workspace = tempfile::tempdir().unwrap();
    let (out, precious) = outside();
    let out = out.path().display().to_string();
    let precious = precious.display().to_string();
    let attempts = [
        ("directly", format!("echo x > {out}/direct.txt")),
        ("by appending", format!("echo x >> {precious}")),
        ("by removing", format!("rm -f {precious}")),
        ("through a symlink", format!("ln -s {out} link && echo x > link/through-link.txt")),
        ("through a hard link", format!("ln {precious} hard && echo x >> hard")),
        ("by renaming into it", format!("echo x > mine && mv mine {out}/moved.txt")),
        ("in /tmp", "echo x > /tmp/ferrule-sandbox-escape-$$ && echo wrote".to_owned()),
        ("in /dev/shm", "echo x > /dev/shm/ferrule-sandbox-escape-$$ && echo wrote".to_owned()),
    ];
    for (how, command) in &attempts {
        let (text, is_error) = confined(workspace.path(), command);
        assert!(is_error, "{how}: {text}");
        assert!(
            text.contains("Permission denied")
                || text.contains("Read-only file system")
                || text.contains("Operation not permitted")
                || text.contains("Invalid cross-device link"),
            "{how}: {text}"
        );
        assert!(!text.contains("wrote"), "{how}: {text}");
    }
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["precious.txt"], "nothing was written outside");
    let escaped = |dir: &str| {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("ferrule-sandbox-escape-"))
            })
            .unwrap_or(false)
    };
    assert!(!escaped("/tmp") && !escaped("/dev/shm"));

    // Unconfined, the same command writes: the test can fail.
    let (text, is_error) = unconfined(workspace.path(), &format!("echo x > {out}/direct.txt"));
    assert!(!is_error, "{text}");
    assert!(Path::new(&out).join("direct.txt").exists());
}

#[test]
fn the_host_process_and_its_environment_are_out_of_sight() {
    let workspace = tempfile::tempdir().unwrap();
    let host = std::process::id();
    let command = format!("cat /proc/{host}/environ; ls /proc | grep -c '^[0-9]'");
    let (text, _) = confined(workspace.path(), &command);
    assert!(text.contains("No such file or directory"), "{text}");
    let processes: usize = text.lines().rev().nth(1).unwrap().trim().parse().unwrap();
    assert!(processes <= 4, "the sandbox sees {processes} processes: {text}");

    let (text, is_error) = unconfined(workspace.path(), &format!("test -r /proc/{host}/environ && echo readable"));
    assert!(!is_error && text.starts_with("readable"), "{text}");
}

#[test]
fn without_network_connections_and_lookups_fail_and_with_it_they_reach_the_server() {
    let workspace = tempfile::tempdir().unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let (tcp_port, udp_port) = (tcp.local_addr().unwrap().port(), udp.local_addr().unwrap().port());
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{tcp_port} && echo hello >&3 && echo connected");
    // A name lookup is a UDP datagram to the resolver: here, to a resolver the test plays.
    let lookup = format!("exec 4<>/dev/udp/127.0.0.1/{udp_port} && printf lookup >&4 && echo sent");

    for command in [&connect, &lookup] {
        let (text, is_error) = confined(workspace.path(), command);
        assert!(is_error && !text.contains("connected") && !text.contains("sent"), "{text}");
        assert!(text.contains("Operation not permitted") || text.contains("Permission denied"), "{text}");
    }
    assert!(tcp.accept().is_err(), "a connection arrived");
    assert!(udp.recv_from(&mut [0u8; 64]).is_err(), "a datagram arrived");

    let sandbox = json!({"mode": "workspace_write", "network": true});
    let (text, is_error) = bash_in(workspace.path(), &connect, sandbox.clone());
    assert!(!is_error && text.contains("connected"), "{text}");
    let (mut stream, _) = tcp.accept().unwrap();
    stream.set_nonblocking(false).unwrap();
    let mut received = String::new();
    stream.read_to_string(&mut received).unwrap();
    assert_eq!(received, "hello\n");
    let (text, is_error) = bash_in(workspace.path(), &lookup, sandbox);
    assert!(!is_error && text.contains("sent"), "{text}");
    let mut datagram = [0u8; 64];
    let (n, _) = udp.recv_from(&mut datagram).unwrap();
    assert_eq!(&datagram[..n], b"lookup");
}

#[test]
fn a_setuid_binary_gains_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    let id = workspace.path().join("id-as-nobody");
    std::fs::copy("/usr/bin/id", &id).unwrap();
    std::os::unix::fs::chown(&id, Some(65534), None).unwrap();
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let me = unsafe { libc::geteuid() };
    let (text, is_error) = confined(workspace.path(), "./id-as-nobody -u; grep NoNewPrivs /proc/self/status");
    assert!(!is_error, "{text}");
    assert!(text.starts_with(&format!("{me}\n")), "the setuid bit took effect: {text}");
    assert!(text.contains("NoNewPrivs:\t1"), "{text}");

    let (text, _) = unconfined(workspace.path(), "./id-as-nobody -u");
    assert!(text.starts_with("65534\n"), "{text}");
}

/// Whether a process of the host runs with `marker` in its command line.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|line| {
            String::from_utf8_lossy(&line).contains(marker)
                && std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| !stat.contains(") Z "))
        })
    })
}

/// Whether `condition` holds within 5 s.
fn eventually(condition: impl Fn() -> bool) -> bool {
    (0..500).any(|_| {
        condition() || {
            std::thread::sleep(Duration::from_millis(10));
            false
        }
    })
}

#[test]
fn background_processes_end_with_the_call_even_in_a_session_of_their_own() {
    let workspace = tempfile::tempdir().unwrap();
    let seconds = 7000 + std::process::id() % 1000;
    // The call answers only once the background process has left the
    // call's session (it touches `ready` after `setsid`), so the unconfined
    // call's end cannot catch it before.
    let command = format!(
        "setsid sh -c 'touch ready; exec sleep {seconds}.5' > /dev/null 2>&1 < /dev/null & \
         while [ ! -e ready ]; do sleep 0.01; done; echo started"
    );
    let (text, is_error) = confined(workspace.path(), &command);
    assert!(!is_error && text.starts_with("started"), "{text}");
    assert!(eventually(|| !running(&format!("{seconds}.5"))), "the background process outlived the call");
    std::fs::remove_file(workspace.path().join("ready")).expect("the confined process was ready");

    let (text, _) = unconfined(workspace.path(), &command.replace(".5", ".25"));
    assert!(text.starts_with("started"), "{text}");
    let marker = format!("{seconds}.25");
    assert!(running(&marker), "unconfined, the background process lives on");
    let _ = std::process::Command::new("pkill").args(["-f", &format!("sleep {marker}")]).status();
}

#[test]
fn ordinary_work_succeeds_inside() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"built\"); return 0; }\n",
    )
    .unwrap();
    let steps = [
        ("compile and run C", "cc -o hello hello.c && ./hello", "built"),
        (
            "git init and commit",
            "git init -q repo && cd repo && echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --format=%s",
            "first",
        ),
        ("python", "/usr/bin/python3 -c 'import tempfile, os; f = tempfile.NamedTemporaryFile(); print(\"py\", os.path.dirname(f.name) == os.environ[\"TMPDIR\"])'", "py True"),
        ("pipes and redirects", "printf 'b\\na\\n' | sort > sorted.txt && tr a-z A-Z < sorted.txt 2>/dev/null | head -1", "A"),
        ("temporary files", "t=$(mktemp) && echo kept > $t && cat $t && rm $t", "kept"),
    ];
    for (what, command, expected) in steps {
        let (text, is_error) = confined(workspace.path(), command);
        assert!(!is_error, "{what}: {text}");
        assert!(text.lines().any(|line| line == expected), "{what}: {text}");
    }
}

#[test]
fn the_configuration_is_checked_when_the_agent_is_built() {
    let workspace = tempfile::tempdir().unwrap();
    let build = |builtins: Value| {
        let mut builtins = builtins;
        builtins["working_directory"] = json!(workspace.path().to_str().unwrap());
        let config = json!({"model": {"provider": "scripted", "script": []}, "builtin_tools": builtins});
        AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build()).map(|_| ()).map_err(|e| e.to_string())
    };
    for (sandbox, expected) in [
        (json!({"mode": "jail"}), "unknown variant"),
        (json!({"mode": "workspace_write", "netwrok": true}), "unknown field"),
        (json!({"writable_roots": ["/does/not/exist"]}), "writable_roots: /does/not/exist"),
        (json!({"readable_roots": ["missing"]}), "readable_roots: missing"),
        (json!({"mode": "read_only", "writable_roots": ["."]}), "read_only writes nowhere"),
        (json!({"mode": "off", "network": true}), "mode off takes no network or roots"),
        (json!({"mode": "off", "readable_roots": ["."]}), "mode off takes no network or roots"),
    ] {
        let error = build(json!({"sandbox": sandbox})).unwrap_err();
        assert!(error.contains(expected), "{sandbox}: {error}");
    }
    build(json!({"confine": true, "sandbox": {"writable_roots": ["."], "readable_roots": ["/usr"]}})).unwrap();
}

#[test]
fn confine_turns_the_sandbox_on_unless_it_is_off() {
    let workspace = tempfile::tempdir().unwrap();
    let (out, _) = outside();
    let command = format!("echo x > {}/direct.txt", out.path().display());
    let with = |builtins: Value| {
        let mut builtins = builtins;
        builtins["working_directory"] = json!(workspace.path().to_str().unwrap());
        builtins["allowed"] = json!(["bash"]);
        let script = json!([{"tool_calls": [call("b", "bash", json!({"command": command}))]}, {"text": "done"}]);
        let (result, _) = run(&agent(script, json!({"builtin_tools": builtins}), vec![]), "go");
        tool_results(&result)[0]["is_error"].as_bool().unwrap()
    };
    assert!(with(json!({"confine": true})), "confine alone sandboxes bash");
    assert!(!with(json!({"confine": true, "sandbox": {"mode": "off"}})), "mode off runs unconfined");
    assert!(with(json!({"sandbox": {"network": false}})), "a sandbox without a mode is workspace_write");
    assert!(!with(json!({})), "neither: unconfined as before");
}

#[test]
fn read_only_writes_nowhere_but_its_temporary_directory() {
    let workspace = tempfile::tempdir().unwrap();
    let (text, is_error) = bash_in(
        workspace.path(),
        "echo x > $TMPDIR/scratch && cat $TMPDIR/scratch && echo y > here.txt",
        json!({"mode": "read_only"}),
    );
    assert!(is_error && text.starts_with("x\n") && text.contains("Read-only file system"), "{text}");
    assert!(!workspace.path().join("here.txt").exists());
}

/// Set in a copy of this test binary run where the kernel refuses what the
/// sandbox needs.
const INNER: &str = "FERRULE_SANDBOX_TEST_INNER";

/// Runs the test `name` of this binary again, as `wrapper` (a command line
/// taking the program to run as `$0` and its arguments after) starts it, with
/// INNER set, and checks that it passed there.
fn run_inner(name: &str, wrapper: &str) {
    let this = std::env::current_exe().unwrap();
    let output = std::process::Command::new("sh")
        .args(["-c", wrapper, this.to_str().unwrap(), "--exact", name, "--nocapture", "--test-threads=1"])
        .env(INNER, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stdout.contains("inner test ran"), "{wrapper}: {stdout}\n{stderr}");
}

#[test]
fn without_user_namespaces_the_command_does_not_run_and_the_model_is_told_why() {
    let workspace = tempfile::tempdir().unwrap();
    if std::env::var_os(INNER).is_some() {
        let (text, is_error) = confined(workspace.path(), "echo ran > ran.txt");
        assert!(is_error, "{text}");
        assert!(text.contains("does not give new user, PID and mount namespaces"), "{text}");
        assert!(!workspace.path().join("ran.txt").exists(), "the command ran unconfined");
        let (text, is_error) = unconfined(workspace.path(), "echo ran");
        assert!(!is_error && text.starts_with("ran"), "mode off still runs: {text}");
        println!("inner test ran");
        return;
    }
    // In a user namespace of its own that may make no more of them.
    run_inner(
        "builtin_sandbox::without_user_namespaces_the_command_does_not_run_and_the_model_is_told_why",
        r#"exec unshare --user --map-root-user sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"' "$0" "$@""#,
    );
}

#[test]
fn a_fork_bomb_is_bounded_for_a_host_that_is_not_root() {
    if std::env::var_os(INNER).is_some() {
        let workspace = tempfile::tempdir().unwrap();
        let bomb = "bomb() { bomb | bomb & }; bomb; sleep 30";
        let script =
            json!([{"tool_calls": [call("b", "bash", json!({"command": bomb, "timeout": 3}))]}, {"text": "done"}]);
        let builtins =
            json!({"working_directory": workspace.path().to_str().unwrap(), "allowed": ["bash"], "confine": true});
        let (result, _) = run(&agent(script, json!({"builtin_tools": builtins}), vec![]), "go");
        let text = text(&tool_results(&result)[0]);
        assert!(text.contains("Resource temporarily unavailable"), "{}", &text[text.len().saturating_sub(500)..]);
        assert!(text.contains("[timed out after 3 s"), "{}", &text[text.len().saturating_sub(500)..]);
        println!("inner test ran");
        return;
    }
    // The kernel bounds no process count of root's: the host here is nobody.
    run_inner(
        "builtin_sandbox::a_fork_bomb_is_bounded_for_a_host_that_is_not_root",
        r#"exec setpriv --reuid 65534 --regid 65534 --clear-groups "$0" "$@""#,
    );
    // The kernel kills the namespace's processes when its first one dies; they
    // go within moments of the call's end.
    let left = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::metadata(entry.path()).is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 65534)
                && std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| !stat.contains(") Z "))
        })
    };
    assert!(eventually(|| !left()), "the bomb outlived the call");
}

/// Text only the host's memory holds (this binary's).
const HOST_MARKER: &str = "ferrule-host-memory-9f1c27d4";

#[test]
fn a_crashing_shell_leaves_no_core_of_the_host() {
    if std::env::var_os(INNER).is_some() {
        let workspace = tempfile::tempdir().unwrap();
        let crash = "exec /usr/bin/python3 -c 'import ctypes; ctypes.string_at(0)'";
        let (text, is_error) = confined(workspace.path(), crash);
        assert!(is_error && text.ends_with("[killed by signal 11]"), "{text}");
        // The crashing program may leave its own core; none holds the host's memory.
        for entry in std::fs::read_dir(workspace.path()).unwrap().flatten() {
            let core = std::fs::read(entry.path()).unwrap();
            let holds_host = core.windows(HOST_MARKER.len()).any(|w| w == HOST_MARKER.as_bytes());
            assert!(!holds_host, "{:?} is a core of the host's memory", entry.file_name());
        }
        println!("inner test ran");
        return;
    }
    // Core dumps on, written where the crashing process stands (core_pattern "core").
    run_inner(
        "builtin_sandbox::a_crashing_shell_leaves_no_core_of_the_host",
        r#"ulimit -c unlimited && exec "$0" "$@""#,
    );
}

#[test]
fn host_services_behind_unix_sockets_are_out_of_reach_without_network() {
    let workspace = tempfile::tempdir().unwrap();
    let (out, _) = outside();
    let path = out.path().join("service.sock");
    let service = std::os::unix::net::UnixListener::bind(&path).unwrap();
    service.set_nonblocking(true).unwrap();
    let command = format!(
        "/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        path.display()
    );
    let (text, is_error) = confined(workspace.path(), &command);
    assert!(is_error && !text.contains("connected") && text.contains("Operation not permitted"), "{text}");
    let datagram = format!(
        "/usr/bin/python3 -c \"import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '{}')\"",
        path.display()
    );
    let (text, is_error) = confined(workspace.path(), &datagram);
    assert!(is_error && text.contains("Operation not permitted"), "{text}");
    assert!(service.accept().is_err(), "the service was reached");

    let (text, _) = unconfined(workspace.path(), &command);
    assert!(text.starts_with("connected"), "{text}");
}

#[test]
fn nothing_outside_changes_mode_times_or_attributes_and_no_set_id_bit_is_set() {
    let workspace = tempfile::tempdir().unwrap();
    let (_out, precious) = outside();
    let before = std::fs::metadata(&precious).unwrap();
    let file = precious.display();
    for command in [
        format!("chmod 4777 {file}"),
        format!("touch -d 2001-01-01 {file}"),
        format!("/usr/bin/python3 -c \"import os; os.setxattr('{file}', 'user.x', b'1')\""),
    ] {
        let (text, is_error) = confined(workspace.path(), &command);
        assert!(is_error, "{command}: {text}");
    }
    let after = std::fs::metadata(&precious).unwrap();
    assert_eq!(before.permissions(), after.permissions());
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());

    // In the workspace too, no file gets a set-id bit or attributes (file capabilities).
    let (text, _) = confined(workspace.path(), "cp /usr/bin/id mine && chmod 755 mine && chmod u+s mine; chmod g+s mine; /usr/bin/python3 -c \"import os; os.setxattr('mine', 'user.x', b'1')\"");
    assert_eq!(text.matches("Operation not permitted").count(), 3, "{text}");
    let mode = std::fs::metadata(workspace.path().join("mine")).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755);

    let (text, is_error) = unconfined(workspace.path(), &format!("chmod 600 {file}"));
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::metadata(&precious).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_root_swapped_for_a_link_leads_nowhere_new() {
    let workspace = tempfile::tempdir().unwrap();
    let (out, _) = outside();
    std::fs::create_dir_all(workspace.path().join("sub/inner")).unwrap();
    std::fs::create_dir(out.path().join("inner")).unwrap();
    // One agent, two calls: the first swaps a directory on the way to a
    // writable root for a link outside, where the same name leads elsewhere.
    let script = json!([
        {"tool_calls": [call("a", "bash", json!({"command": format!("mv sub sub.old && ln -s {} sub && echo swapped", out.path().display())}))]},
        {"tool_calls": [call("b", "bash", json!({"command": "echo x > sub/inner/escaped.txt && echo wrote"}))]},
        {"text": "done"}
    ]);
    let config = json!({"builtin_tools": {"working_directory": workspace.path().to_str().unwrap(), "allowed": ["bash"],
                                          "sandbox": {"writable_roots": ["sub/inner"]}}});
    let (result, _) = run(&agent(script, config, vec![]), "go");
    let results = tool_results(&result);
    assert!(text(&results[0]).starts_with("swapped"), "{}", text(&results[0]));
    let second = text(&results[1]);
    assert!(results[1]["is_error"].as_bool().unwrap() && !second.contains("wrote"), "{second}");
    assert!(second.contains("Read-only file system") || second.contains("Permission denied"), "{second}");
    assert!(!out.path().join("inner/escaped.txt").exists(), "the write went through the link");
}

#[test]
fn no_terminal_no_devices_and_no_secrets_of_the_system() {
    let workspace = tempfile::tempdir().unwrap();
    let (text, _) = confined(
        workspace.path(),
        "exec 3</dev/tty || echo no-tty; ls /dev/pts > /dev/null || echo no-pts; echo shadow $(wc -c < /etc/shadow); head -c 4 /dev/urandom | wc -c; echo err > /dev/stderr",
    );
    assert!(text.contains("no-tty") && text.contains("no-pts"), "{text}");
    assert!(text.contains("shadow 0\n") && text.contains("\n4\n") && text.contains("err\n"), "{text}");
}

#[test]
fn a_fork_bomb_is_bounded_for_a_root_host_by_a_cgroup_of_its_own() {
    if unsafe { libc::geteuid() } != 0 {
        return; // a_fork_bomb_is_bounded_for_a_host_that_is_not_root covers this host
    }
    // Without a pids controller the bomb would be bounded by nothing but the timeout.
    let Some(own) = pids_cgroup() else {
        println!("no cgroup v1 pids hierarchy here: not run");
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    let bomb = "bomb() { bomb | bomb & }; bomb; sleep 30";
    let script = json!([{"tool_calls": [call("b", "bash", json!({"command": bomb, "timeout": 3}))]}, {"text": "done"}]);
    let builtins =
        json!({"working_directory": workspace.path().to_str().unwrap(), "allowed": ["bash"], "confine": true});
    let (result, _) = run(&agent(script, json!({"builtin_tools": builtins}), vec![]), "go");
    let text = text(&tool_results(&result)[0]);
    let tail = &text[text.len().saturating_sub(500)..];
    assert!(text.contains("Resource temporarily unavailable") && text.contains("[timed out after 3 s"), "{tail}");
    let ours = format!("ferrule-bash-{}-", std::process::id());
    // Other tests' commands have cgroups of their own for moments.
    let left =
        || std::fs::read_dir(&own).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with(&ours));
    assert!(eventually(|| !left()), "the command's cgroup outlived the call");
}

/// A Python program run in the sandbox, by the system's interpreter.
fn python(code: &str) -> String {
    format!("/usr/bin/python3 -c '{code}'")
}

/// Asserts that each of `calls` fails in the sandbox with EPERM: `what`, and
/// Python statements that call the C library (`libc`) and leave the result in `r`.
fn assert_refused(workspace: &Path, calls: &[(&str, &str)]) {
    for (what, call) in calls {
        let code = format!(
            "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); {call}; print(r, os.strerror(ctypes.get_errno()))"
        );
        let (text, _) = confined(workspace, &python(&code));
        assert!(text.starts_with("-1 Operation not permitted"), "{what}: {text}");
    }
}

#[test]
fn the_shell_holds_no_capability_even_for_a_root_host() {
    let workspace = tempfile::tempdir().unwrap();
    assert_refused(
        workspace.path(),
        &[
            // open_tree(AT_FDCWD, "/etc", OPEN_TREE_CLONE): a copy of /etc without what covers its secrets.
            ("open_tree", "r = libc.syscall(428, -100, b\"/etc\", 1)"),
            ("chroot", "r = libc.chroot(b\"/usr\")"),
            // setxattrat(AT_FDCWD, "f", 0, "user.x", NULL, 0)
            ("setxattrat", "open(\"f\", \"w\").close(); r = libc.syscall(463, -100, b\"f\", 0, b\"user.x\", None, 0)"),
            ("creating with set-id bits", "r = libc.open(b\"setid\", os.O_CREAT | os.O_WRONLY, 0o6755)"),
            // getpid by its x32 number: refused before the kernel could say x32 is off (ENOSYS).
            #[cfg(target_arch = "x86_64")]
            ("an x32 system call", "r = libc.syscall(0x40000000 | 39)"),
        ],
    );
    assert!(!workspace.path().join("setid").exists());
    let (text, _) = confined(workspace.path(), "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status");
    for line in text.lines().filter(|line| line.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{text}");
    }
}

#[test]
fn unix_datagrams_go_nowhere_without_network() {
    let workspace = tempfile::tempdir().unwrap();
    let (out, _) = outside();
    let path = out.path().join("log.sock");
    let service = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    service.set_nonblocking(true).unwrap();
    let target = path.display();
    for code in [
        format!("import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b\"x\", \"{target}\")"),
        format!("import socket; socket.socket(socket.AF_UNIX, socket.SOCK_RAW).sendto(b\"x\", \"{target}\")"),
    ] {
        let (text, is_error) = confined(workspace.path(), &python(&code));
        assert!(is_error && text.contains("Operation not permitted"), "{code}: {text}");
    }
    assert!(service.recv(&mut [0u8; 8]).is_err(), "a datagram arrived");
    let (text, is_error) = confined(
        workspace.path(),
        &python("import socket; a, b = socket.socketpair(); a.send(b\"ok\"); print(b.recv(2).decode())"),
    );
    assert!(!is_error && text.starts_with("ok"), "a stream socketpair still works: {text}");
}

#[test]
fn no_keyring_no_user_namespace_and_no_cgroup_of_the_hosts() {
    let workspace = tempfile::tempdir().unwrap();
    assert_refused(
        workspace.path(),
        &[
            // keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
            ("keyctl", "r = libc.syscall(250, 0, -3, 0)"),
            // add_key("user", "k", "v", 1, KEY_SPEC_SESSION_KEYRING)
            ("add_key", "r = libc.syscall(248, b\"user\", b\"k\", b\"v\", 1, -3)"),
        ],
    );
    let (text, _) = confined(
        workspace.path(),
        "unshare --user true || echo no-user-namespace; ls /etc/ssl/private 2>/dev/null | wc -l; grep -c ':/$' /proc/self/cgroup",
    );
    assert!(text.contains("no-user-namespace\n0\n"), "{text}");
    let cgroups: usize = text.lines().rev().nth(1).and_then(|n| n.trim().parse().ok()).unwrap_or(0);
    let listed = std::fs::read_to_string("/proc/self/cgroup").unwrap().lines().count();
    assert_eq!(cgroups, listed, "each of the command's cgroups is the root of its namespace: {text}");
}

/// This process's cgroup in cgroup v1's pids hierarchy, if it has one.
fn pids_cgroup() -> Option<std::path::PathBuf> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = membership.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':').skip(1);
        let (controllers, path) = (fields.next()?, fields.next()?);
        let pids = controllers.split(',').any(|c| c == "pids");
        pids.then(|| Path::new("/sys/fs/cgroup/pids").join(path.trim_start_matches('/')))
    })?;
    own.is_dir().then_some(own)
}

#[test]
fn a_cancelled_command_leaves_no_cgroup_behind() {
    if unsafe { libc::geteuid() } != 0 {
        return; // only a root host's commands have cgroups
    }
    let Some(own) = pids_cgroup() else { return };
    let workspace = tempfile::tempdir().unwrap();
    let marker = format!("{}.75", 8000 + std::process::id() % 1000);
    let script =
        json!([{"tool_calls": [call("b", "bash", json!({"command": format!("sleep {marker}")}))]}, {"text": "done"}]);
    let builtins =
        json!({"working_directory": workspace.path().to_str().unwrap(), "allowed": ["bash"], "confine": true});
    let agent = agent(script, json!({"builtin_tools": builtins}), vec![]);
    let (run_handle, _) = start(&agent, "go");
    assert!(eventually(|| running(&marker)), "the command did not start");
    let ours = || {
        let prefix = format!("ferrule-bash-{}-", std::process::id());
        let entries = std::fs::read_dir(&own).unwrap();
        entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).count()
    };
    assert!(ours() > 0, "the command has no cgroup");
    run_handle.cancel();
    run_handle.wait_blocking().unwrap();
    assert!(eventually(|| !running(&marker)), "the command outlived the cancel");
    // Other tests' commands have cgroups of their own for moments.
    assert!(eventually(|| ours() == 0), "the cancelled command's cgroup was left");
}
