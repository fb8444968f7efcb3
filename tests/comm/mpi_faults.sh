#!/bin/sh
# tests/comm/mpi_faults.sh PROGRAM FABRIC N CASE: runs mpi_faults CASE as N
# processes (tools/mpirun.sh FABRIC) and checks what the job printed, how
# long it took and that it left nothing behind (no process of it after a
# few seconds, no file in /dev/shm).  Prints OK or what is wrong, and
# exits 0 or 1.  The seconds allowed are an idle machine's, times how much
# slower the machine runs around the job (`mpi_faults slowdown`,
# tests/load.h): the job starts and ends processes, work a busy machine
# does slower.
set -u
# The files the job leaves in /dev/shm are counted in a /dev/shm of its
# own (a private mount namespace), where no other job's can be: as root,
# this script runs itself again inside one.
if [ -z "${MPI_FAULTS_PRIVATE:-}" ] && [ "$(id -u)" -eq 0 ] &&
  unshare -m true 2>/dev/null; then
  MPI_FAULTS_PRIVATE=1 exec unshare -m sh -c \
    'mount -t tmpfs tmpfs /dev/shm && exec sh "$0" "$@"' "$0" "$@"
fi
prog=$1
fabric=$2
n=$3
case=$4
here=$(dirname "$0")
out=$(mktemp)
shm_before=$(ls /dev/shm | sort)
slow=$("$prog" slowdown)
start=$(date +%s%N)
sh "$here/../../tools/mpirun.sh" "$fabric" "$n" "$prog" "$case" >"$out" 2>&1
rc=$?
end=$(date +%s%N)
took=$(( (end - start) / 1000000 ))
slow=$(echo "$slow $("$prog" slowdown)" | awk '{print ($1 > $2 ? $1 : $2)}')
# ms: an idle machine's allowance times the slowdown.
allow() { echo "$1 $slow" | awk '{printf "%d", $1 * $2}'; }
fail() {
  echo "mpi_faults $case on $n processes ($fabric): $*"
  echo "--- the job printed:"
  cat "$out"
  rm -f "$out"
  exit 1
}
count() { grep -c -F -- "$1" "$out"; }
count_re() { grep -c -E -- "$1" "$out"; }
# others_say KERNEL DID: every rank but 1 printed once, as mpirun stopped
# it (over TCP: or as an MPI call to rank 1 failed), that rank 1's process
# is gone and that its kernel KERNEL on AIV core 0 DID (an extended
# regular expression).
others_say() {
  how="was stopped by signal SIGTERM from outside"
  [ "$fabric" = shm ] || how="($how|ended: an MPI call failed: [^(]*)"
  for r in $(seq 0 $((n - 1))); do
    [ "$r" -eq 1 ] && continue
    [ "$(count_re "^pld: rank $r \\(device $r\\) $how \\(the job is ending: rank 1's process is gone\\) while kernel $1 on AIV core 0 \\(block 0 of 1\\) $2\$")" -eq 1 ] ||
      fail "expected rank $r to say once that rank 1's process is gone and that its kernel $1 $2"
  done
}
# The rank that rank $1's line says its kernel waited for.
waited_for() {
  sed -n "s/^pld: rank $1 (device $1) .* waited in pld_allreduce call [0-9]*, round [0-9]* for rank \([0-9]*\)\$/\1/p" "$out"
}
case $case in
deadlock)
  [ $rc -eq 0 ] || fail "exit status $rc, expected 0 (PLD_ERR_DEADLOCK within 2 s on process 0)"
  [ "$(count 'deadlock: these waits can never be satisfied')" -eq 1 ] ||
    fail "expected the deadlock report printed exactly once"
  for r in $(seq 0 $((n - 1))); do
    [ "$(count "rank $r (device $r): kernel k_fault on AIV core 0 (block 0 of 1) waits on window 'sig' (buffer #0) cell [0] >= 1; it holds 0;")" -eq 1 ] ||
      fail "expected one line of the report for rank $r's wait"
  done
  ;;
crash)
  [ $rc -ne 0 ] || fail "exit status 0, expected the job to fail"
  [ "$(count 'pld: rank 1 (device 1) crashed with signal SIGSEGV (Segmentation fault) at address 0 in kernel k_fault on AIV core 0 (block 0 of 1)')" -eq 1 ] ||
    fail "expected rank 1's crash report exactly once"
  ;;
abort)
  [ $rc -ne 0 ] || fail "exit status 0, expected the job to fail"
  [ "$(count 'pld: rank 1 (device 1) crashed with signal SIGABRT (Aborted) in kernel k_fault on AIV core 0 (block 0 of 1)')" -eq 1 ] ||
    fail "expected rank 1's crash report, with no address, exactly once"
  ;;
kill)
  [ $rc -ne 0 ] || fail "exit status 0, expected the job to fail"
  [ "$(count 'exited on signal 9 (Killed)')" -eq 1 ] ||
    fail "expected mpirun to say rank 1 was killed"
  [ "$(count 'crashed with')" -eq 0 ] || fail "no process crashed"
  # Every other rank waits on its cell [0].
  others_say k_fault "waited on window 'sig'"
  ;;
kill-coll)
  [ $rc -ne 0 ] || fail "exit status 0, expected the job to fail"
  [ "$(count 'exited on signal 9 (Killed)')" -eq 1 ] ||
    fail "expected mpirun to say rank 1 was killed"
  killed=$(sed -n 's/^killed at \([0-9]*\) ns$/\1/p' "$out")
  [ -n "$killed" ] || fail "rank 1 did not say when it was killed"
  after=$(( (end - killed) / 1000000 ))
  [ $after -lt "$(allow 2000)" ] ||
    fail "the job ended $after ms after rank 1 was killed, expected within $(allow 2000) ms (2 s on an idle machine)"
  # Over shared memory every other rank waits for rank 1's credit, or
  # for a rank that does: rank 1 may die between its credits of one
  # round, and the rank it reached goes on to the next call.  Over TCP a
  # rank may be in an MPI call to rank 1 instead (its core runs), or wait
  # for a rank that is, or end as that call fails.
  did="waited in pld_allreduce call [0-9]+, round [0-9]+ for rank [0-9]+"
  [ "$fabric" = shm ] ||
    did="($did|ran in pld_allreduce call [0-9]+, round [0-9]+)"
  others_say k_kill_coll "$did"
  if [ "$fabric" = shm ]; then
    for r in $(seq 0 $((n - 1))); do
      [ "$r" -eq 1 ] && continue
      w=$(waited_for "$r")
      [ "$w" = 1 ] || { [ "$w" != "$r" ] && [ "$(waited_for "$w")" = 1 ]; } ||
        fail "expected rank $r to wait for rank 1, or for a rank that waits for rank 1 (it waited for rank $w)"
    done
  fi
  [ "$(count 'crashed with')" -eq 0 ] || fail "no process crashed"
  ;;
ok | stale | stale-limit | rerun)
  [ $rc -eq 0 ] || fail "exit status $rc"
  [ "$(count 'process 0: status PLD_OK')" -eq 1 ] || fail "expected PLD_OK"
  ;;
*) fail "unknown case" ;;
esac
# rerun makes 60 runs, the others one.
limit=$(allow $([ "$case" = rerun ] && echo 20000 || echo 10000))
[ $took -lt $limit ] ||
  fail "took $took ms, expected the job to end within $limit ms (10 s on an idle machine, 20 s for rerun; $slow times slower now)"
# Processes of a job that failed are reaped by their launcher a moment after
# mpirun returns.
reap=$(allow 5000)
i=0
while pgrep -f "$prog $case" >/dev/null; do
  i=$((i + 100))
  [ $i -lt $reap ] || fail "processes of the job are still there $reap ms after it ended: $(pgrep -a -f "$prog $case")"
  sleep 0.1
done
shm_after=$(ls /dev/shm | sort)
[ "$shm_after" = "$shm_before" ] ||
  fail "files left in /dev/shm: $shm_after (before: $shm_before)"
rm -f "$out"
echo OK
