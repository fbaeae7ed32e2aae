#!/bin/sh
# Human approval across two processes, with examples/c/approval.c as the host:
# the first process stops for approval and writes the run's state to a file; a
# second, new process resumes from that file with the user's decisions.
set -eu
program=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() {
    echo "FAIL: $*" >&2
    for out in first.out second.out refused.err; do [ -e "$out" ] && sed "s/^/  $out: /" "$out" >&2; done
    exit 1
}

status=0
"$program" start state.json > first.out || status=$?
[ "$status" -eq 3 ] || fail "the first process exited with $status, not 3 (waiting for approval)"
[ ! -e outbox.txt ] || fail "an email went out before approval"
grep -q '^  lookup_customer -> The customer is on the Gold plan.$' first.out || fail "the lookup did not run"
grep -q '^  call_2 send_email {.*"to":"ana@example.com"}$' first.out || fail "call_2 is not listed as waiting"
grep -q '^  call_3 send_email {.*"to":"everyone@example.com"}$' first.out || fail "call_3 is not listed as waiting"

# A resume that misses a decision is refused and changes nothing.
if "$program" resume state.json call_2=yes > /dev/null 2> refused.err; then fail "a missing decision was accepted"; fi
grep -q 'no decision for call "call_3"' refused.err || fail "the refusal does not name call_3"
[ ! -e outbox.txt ] || fail "a refused resume sent an email"

"$program" resume state.json call_2=yes "call_3=no:Do not email the whole list." > second.out ||
    fail "the second process failed"
[ "$(cat outbox.txt)" = "to: ana@example.com; subject: Your plan" ] || fail "the outbox holds: $(cat outbox.txt)"
grep -q '^  send_email -> Sent to ana@example.com.$' second.out || fail "the approved email was not reported"
grep -q '^  send_email -> Do not email the whole list.$' second.out || fail "the rejection was not the model's result"
grep -q '^answer: I told Ana she is on the Gold plan.$' second.out || fail "the run did not go on to the answer"
echo "ok: approval across two processes"
