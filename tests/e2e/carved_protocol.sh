#!/usr/bin/env bash
# san: yes
# clang: yes (carved as clang built it; docs/internals.md)
# carved_protocol.sh - carved's socket API against bad clients, on a private socket with the
# simulated GPU: malformed JSON, a JSON value that is no object, invalid UTF-8, a NUL byte, a
# request over 64 KiB, a request cut off without its newline, several requests in one write
# and one request in many writes, and a client that hangs up before reading: each gets one
# error line that says what is wrong (or its answers), and carved keeps serving and is still
# alive at the end; clients that never read their replies do not hold up another, nor one that sends 1200 requests at once; 256 clients that never finish a request lose their slots after 5 s, also when they trickle a byte at a time; one user (not an admin) holds 16 connections at most, and users who are not admins 240 together; the CLI gives up on a stopped carved after CARVE_DAEMON_TIMEOUT. In the sanitizer build carved runs with ASan, so a memory error fails it.
#
#   BUILD=build bash tests/e2e/carved_protocol.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

# shellcheck source=tests/e2e/private_carved.bash
. tests/e2e/private_carved.bash

start_carved 200ms

# send CASE...: one raw exchange per case, each on a connection of its own, by one python
# client; prints `CASE<TAB>what came back (or why nothing did)', one line per case
# (as the user AS says, with the python PY: `AS="setpriv ..." PY=/usr/bin/python3 send CASE')
send() {
    ${AS:-} "${PY:-python3}" - "$CARVE_SOCKET" "$@" <<'EOF'
import select, socket, sys, time
path = sys.argv[1]
def lines(n):
    buf = b""
    while buf.count(b"\n") < n:
        try:
            chunk = s.recv(65536)
        except (socket.timeout, ConnectionResetError) as e:
            return buf.decode("utf-8", "replace") + "<%s>" % type(e).__name__
        if not chunk:
            return buf.decode("utf-8", "replace") + "<eof>"
        buf += chunk
    return buf.decode("utf-8", "replace")
def told_and_closed(holders):
    """How many of the held connections carved told it dropped them; closes them all."""
    told = 0
    for h in holders:
        try:
            told += b"not finished within 5 s" in h.recv(4096)
        except OSError:
            pass
        h.close()
    return told
def exchange(case):
  global s
  s = socket.socket(socket.AF_UNIX)
  s.settimeout(5)
  s.connect(path)
  if case == "not-json":
      s.sendall(b"hello carved\n"); return lines(1)
  elif case == "not-object":
      s.sendall(b"[1, 2, 3]\n"); return lines(1)
  elif case == "bad-utf8":
      s.sendall(b'{"op":"create","name":"x","\xd6\x8b\xc3\xc0":1}\n'); return lines(1)
  elif case == "nul":
      s.sendall(b'{"op":"list"}\x00{"op":"delete","name":"keep"}\n'); return lines(1)
  elif case == "oversized":
      s.sendall(b'{"op":"list","pad":"' + b"x" * 70000 + b'"}\n'); return lines(1)
  elif case == "just-64k":
      head = b'{"op":"list","pad":"'
      s.sendall(head + b"x" * (65536 - len(head) - 3) + b'"}\n'); return lines(1)
  elif case == "partial":
      s.sendall(b'{"op":"li'); s.shutdown(socket.SHUT_WR); return lines(1)
  elif case == "many-in-one":
      s.sendall(b'{"op":"list"}\n{"op":"nope"}\n{}\n'); return lines(3)
  elif case == "one-in-many":
      for b in b'{"op":"join","name":"keep"}\n':
          s.send(bytes([b])); time.sleep(0.001)
      return lines(1)
  elif case == "hang-up":
      s.sendall(b'{"op":"ps"}\n' * 50); s.close(); return "closed"
  elif case == "hold-slots":
      # 256 clients (root's: an admin's) that start a request and wait fill every slot;
      # carved drops them after 5 s, telling each why, and serves again
      s.close()  # this case's own connection would take a slot
      time.sleep(0.1)
      holders = []
      for _ in range(256):
          h = socket.socket(socket.AF_UNIX); h.settimeout(15); h.connect(path)
          h.sendall(b'{"op":"li'); holders.append(h)
      time.sleep(0.3)
      s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(path)
      try:
          s.sendall(b'{"op":"list"}\n'); full = lines(1)[:40]
      except OSError as e:
          full = "<%s>" % type(e).__name__
      told = told_and_closed(holders)  # each read waits for carved's drop, 5 s in
      s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(path)
      s.sendall(b'{"op":"list"}\n')
      return "while full: %s; told: %d of 256; after: %s" % (full, told, lines(1)[:40])
  elif case == "trickle":
      # 256 clients that send a space every second never finish a request: the 5 s count
      # from when a request could start, not from the last byte (they held every slot)
      s.close()
      time.sleep(0.1)
      holders = []
      for _ in range(256):
          h = socket.socket(socket.AF_UNIX); h.settimeout(1); h.connect(path); holders.append(h)
      # a space each second, for 7 s or until carved has told every one (each has a reply)
      t, sent = time.time(), 0
      while time.time() - t < 7:
          if time.time() - t >= sent:
              for h in holders:
                  try:
                      h.send(b" ")
                  except OSError:
                      pass
              sent += 1
          time.sleep(0.1)
          if len(select.select(holders, [], [], 0)[0]) == len(holders):
              break
      took = time.time() - t
      s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(path)
      s.sendall(b'{"op":"list"}\n')
      after = lines(1)[:40]
      told = told_and_closed(holders)
      return "after %.1f s of trickling: %s; told: %d of 256" % (took, after, told)
  elif case == "per-user":
      # one user's 20 silent clients: the 17th and later are turned away at once, told why
      s.close()
      held = [socket.socket(socket.AF_UNIX) for _ in range(20)]
      for h in held:
          h.settimeout(2); h.connect(path)
      told = []
      for h in held[16:]:
          try:
              told.append(h.recv(4096).decode())
          except OSError as e:
              told.append("<%s>" % type(e).__name__)
      return "turned away: %d of 4: %s" % (sum("the most a user may" in t for t in told), told[0][:120])
  elif case == "hold-16":
      # one user's 16 silent connections, for 4 s (carved drops them at 5) or until the file
      # $HOLD_RELEASE is there; a file named for the uid in $HOLD_MARKS says they are all in
      s.close()
      held = [socket.socket(socket.AF_UNIX) for _ in range(16)]
      for h in held:
          h.connect(path)
      import os
      open(os.path.join(os.environ["HOLD_MARKS"], str(os.getuid())), "w").close()
      for _ in range(40):
          if os.path.exists(os.environ["HOLD_RELEASE"]):
              break
          time.sleep(0.1)
      return "held 16"
  elif case == "knock":
      # what carved says to one more connection, if anything, within 2 s
      try:
          return s.recv(4096).decode()[:160] or "<eof>"
      except OSError as e:
          return "<%s>" % type(e).__name__
  elif case == "big-ids":
      # ids past 32 bits were cut to them (4294967296 made a slice open to uid 0)
      s.sendall(b'{"op":"create","name":"big1","users":[4294967296]}\n'
                b'{"op":"create","name":"big2","groups":[4294967295]}\n')
      return lines(2)
  elif case == "no-reader":
      # clients that send requests and never read the replies: each stalled carved for a
      # second (a blocking write with a 1 s timeout), others and the polls with it
      s.close()
      quiet = []
      for _ in range(8):
          q = socket.socket(socket.AF_UNIX); q.connect(path)
          q.sendall(b'{"op":"ps"}\n' * 4000); quiet.append(q)
      time.sleep(0.2)
      t = time.time()
      s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(path)
      s.sendall(b'{"op":"list"}\n')
      got = lines(1)[:20]
      took = time.time() - t
      # a slow reader of 300 pipelined replies still gets every one, in order
      r = socket.socket(socket.AF_UNIX); r.settimeout(10); r.connect(path)
      r.sendall(b'{"op":"ps"}\n' * 300); time.sleep(0.5)
      buf = b""
      while buf.count(b"\n") < 300:
          chunk = r.recv(4096)
          if not chunk:
              break
          buf += chunk
      good = sum(l.startswith(b'{"ok":true') for l in buf.split(b"\n"))
      for q in quiet:
          q.close()
      return "%s in %s s; slow reader: %d of 300" % (got, "under 1" if took < 1 else "%.1f" % took, good)
  elif case == "flood":
      # one client's 46 KB of slice creates and deletes in one write, each rewriting
      # slices.json, with 150 slices on the node: another client's list waited until every
      # one was answered (5.6 s), until 2026-11-28; now each client gets a few in turn
      import threading
      s.settimeout(60)
      s.sendall(b"".join(b'{"op":"create","name":"pad%d","memory":"64MiB"}\n' % i
                         for i in range(150)))
      lines(150)
      flood = socket.socket(socket.AF_UNIX); flood.settimeout(60); flood.connect(path)
      answered = [0]
      def read_flood():
          while answered[0] < 1200:
              chunk = flood.recv(65536)
              if not chunk:
                  break
              answered[0] += chunk.count(b"\n")
      reader = threading.Thread(target=read_flood); reader.start()
      flood.sendall(b"".join(b'{"op":"create","name":"f%d","memory":"64MiB"}\n'
                             b'{"op":"delete","name":"f%d"}\n' % (i, i) for i in range(600)))
      time.sleep(0.05)
      other = socket.socket(socket.AF_UNIX); other.settimeout(60); other.connect(path)
      other.sendall(b'{"op":"list"}\n')
      other.recv(65536)
      before = answered[0]
      reader.join(60)
      s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(path)  # idle 5 s: dropped
      s.sendall(b"".join(b'{"op":"delete","name":"pad%d"}\n' % i for i in range(150)))
      lines(150)
      return "list answered after %d of the flood's 1200 answers; %d came in all" % (before, answered[0])
  elif case == "wrong-types":
      s.sendall(b'{"op":"create","name":7,"memory":[1]}\n{"op":5}\n{"op":"create","name":"y","users":"root"}\n'
                b'{"op":"create","name":"' + b"n" * 64 + b'"}\n')
      return lines(4)
for case in sys.argv[2:]:
    print(case + "\t" + exchange(case).replace("\n", " | "), flush=True)
EOF
}

"$CARVE" slice create keep --memory 512MiB >/dev/null
send not-json not-object bad-utf8 nul oversized just-64k partial many-in-one one-in-many wrong-types \
    big-ids >"$work/replies"
expect() { # expect CASE WHAT PATTERN...: every pattern is in the reply
    local out p
    out=$(grep "^$1	" "$work/replies")
    for p in "${@:3}"; do
        if [[ $out != *"$p"* ]]; then
            bad "$2: reply lacks '$p': ${out:0:300}"
            return
        fi
    done
    ok "$2: ${out:0:160}"
}
expect not-json "not JSON: an error naming the parse problem" '"ok":false' 'not a JSON object'
expect not-object "a JSON array: refused" '"ok":false' 'not a JSON object'
expect bad-utf8 "invalid UTF-8: still one error line" '"ok":false' 'not a JSON object'
expect nul "a NUL byte inside the line: refused, and the part after it not run" '"ok":false' 'NUL byte'
expect oversized "a 70 KB line: refused as longer than 64 KiB" '"ok":false' 'longer than 64 KiB'
expect just-64k "a line of 64 KiB exactly, its newline included: answered" '"ok":true' '"snapshot":'
expect partial "cut off without a newline: told so" '"ok":false' 'without a newline'
expect many-in-one "three requests in one write: three replies in order" '"ok":true' 'unknown op `nope' 'has no `op'
expect one-in-many "one request in 28 writes: one answer" '"ok":true' '"shm":'
expect wrong-types "fields of the wrong type: each refused with its field; a name too long with the limit" '`name'"'"' must be a string' 'has no `op' '`users'"'"' must be a list' '`name'"'"' is 64 bytes long; give at most 63'
expect big-ids "a uid or gid past 4294967294: refused, not cut to 32 bits" 'uid 4294967296 is out of range' 'gid 4294967295 is out of range'
send no-reader >"$work/noread"
if grep -q '{"ok":true.* in under 1 s; slow reader: 300 of 300' "$work/noread"; then
    ok "8 clients that never read their replies do not hold up others: $(cut -f2 "$work/noread")"
else
    bad "clients that never read: $(cat "$work/noread")"
fi
send flood >"$work/flood"
if grep -q 'came in all' "$work/flood" && [ "$(sed -n 's/.*answered after \([0-9]*\) of.*/\1/p' "$work/flood")" -lt 1200 ] &&
    grep -q '; 1200 came in all' "$work/flood"; then
    ok "one client's 1200 requests in one write do not hold up another's: $(cut -f2 "$work/flood")"
else
    bad "a flood of requests held up another client: $(cat "$work/flood")"
fi
# shellcheck disable=SC2046  # twenty words
send $(printf 'hang-up %.0s' $(seq 20)) >/dev/null
send hold-slots >"$work/slots"
if grep -q 'while full: \(<[A-Za-z]*>\|{"ok":false,"busy":true[^;]*\); told: 256 of 256; after: {"ok":true' "$work/slots"; then
    ok "256 clients that never finish their request fill every slot (a 257th is shut out), are dropped after 5 s, each told why, and carved serves again ($(cut -c1-100 "$work/slots"))"
else
    bad "256 unfinished clients: $(cat "$work/slots")"
fi
send trickle >"$work/trickle"
if grep -q 'after [0-9.]* s of trickling: {"ok":true.*; told: 256 of 256' "$work/trickle"; then
    ok "256 clients that trickle a byte a second are dropped after 5 s all the same, told why ($(cut -f2 "$work/trickle" | cut -c1-80))"
else
    bad "256 trickling clients: $(cat "$work/trickle")"
fi
# nobody's python: root's may live where nobody cannot read (pyenv under /root)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && [ -x /usr/bin/python3 ]; then
    chmod 755 "$work" # the socket's directory, for nobody
    AS="setpriv --reuid=65534 --regid=65534 --clear-groups" PY=/usr/bin/python3 send per-user >"$work/per-user"
    if grep -q 'turned away: 4 of 4: {"ok":false,"busy":true,"error":"you hold 16 connections to carved, the most a user may' "$work/per-user"; then
        ok "nobody's 17th to 20th connections are turned away, told why ($(cut -f2 "$work/per-user" | cut -c1-60))"
    else
        bad "one user's 20 connections: $(cat "$work/per-user")"
    fi
    # 15 users who are not admins, 16 connections each, fill the 240 places open to them: a
    # 16th user is turned away, an admin (root) still gets in
    fillers=()
    mkdir -m 1777 "$work/marks"
    for u in $(seq 60001 60015); do
        HOLD_MARKS=$work/marks HOLD_RELEASE=$work/release AS="setpriv --reuid=$u --regid=$u --clear-groups" PY=/usr/bin/python3 \
            send hold-16 >/dev/null &
        fillers+=($!)
    done
    for _ in $(seq 40); do # until all 15 are in (their 4 s run from then), 4 s at most
        [ "$(find "$work/marks" -type f | wc -l)" -eq 15 ] && break
        sleep 0.1
    done
    AS="setpriv --reuid=60016 --regid=60016 --clear-groups" PY=/usr/bin/python3 send knock >"$work/knock"
    admin_in=$("$CARVE" slice list 2>&1)
    admin_rc=$?
    touch "$work/release" # the fillers let go
    wait "${fillers[@]}"
    if grep -q '"busy":true,"error":"carved keeps its last 16 free places for its admins' "$work/knock" &&
        [ "$admin_rc" -eq 0 ] && [[ $admin_in == *keep* ]]; then
        ok "15 users holding 16 connections each leave a 16th user out, told why, and root in ($(cut -f2 "$work/knock" | cut -c1-70))"
    else
        bad "users filling carved ($(find "$work/marks" -type f | wc -l) of 15 in): a 16th user got $(cat "$work/knock"); root: rc $admin_rc, $admin_in"
    fi
else
    echo "skip - one user's connections (needs root, setpriv and /usr/bin/python3)"
fi
ok "20 clients that hang up before reading their 50 replies"
list=$("$CARVE" slice list 2>&1)
if kill -0 "$daemon" 2>/dev/null && [[ $list == *keep* ]]; then
    ok "carved is alive and serving afterwards, slice keep untouched"
else
    bad "carved after the bad clients: $list; log: $(tail -n 5 "$work/carved.log")"
fi
# a stopped carved: the CLI gives up after CARVE_DAEMON_TIMEOUT seconds (it waited for ever)
kill -STOP "$daemon"
t0=$(date +%s%N)
stuck=$(CARVE_DAEMON_TIMEOUT=1 timeout 20 "$CARVE" slice list 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$daemon"
check "carve slice list against a stopped carved exits 1 after the 1 s timeout ($rc, $ms ms: $stuck)" \
    '[ "$rc" -eq 1 ] && [[ $stuck == *"did not answer in 1 s"* ]] && [ "$ms" -lt 10000 ]'
check "carved serves again once continued" '"$CARVE" slice list >/dev/null'
kill -TERM "$daemon"
wait "$daemon"
rc=$?
daemon=
if [ "$rc" -eq 0 ]; then ok "SIGTERM: carved exits 0"; else bad "SIGTERM: carved exited $rc"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
