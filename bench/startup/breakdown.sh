#!/bin/bash
# breakdown.sh PID - what the RSS of a running process (an idle `ckube server`) is made of:
#
#   bench/startup/breakdown.sh PID
#   bench/startup/idle.sh --breakdown     (starts the servers and runs this on them)
#
# Prints: VmRSS, and Rss, Pss and private pages from smaps_rollup; RSS by mapping from
# smaps (each shared library's file-backed pages, the ckube binary, thread stacks, the
# allocator's heap and other anonymous memory); the threads by name (their comm) and,
# with gdb, by the function that started them; and jemalloc's stats (through gdb).
set -eu
pid=$1
echo "load average (1 min) $(cut -d' ' -f1 /proc/loadavg)"
echo "VmRSS $(awk '$1 == "VmRSS:" { print $2 }' /proc/"$pid"/status) KiB, threads $(awk '$1 == "Threads:" { print $2 }' /proc/"$pid"/status)"
awk '$1 ~ /^(Rss|Pss|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty|Anonymous):$/ { printf "%s %s KiB  ", $1, $2 } END { print "" }' \
    "/proc/$pid/smaps_rollup"
echo
echo "RSS by mapping (KiB; Pss beside it):"
# thread stacks are the anonymous mappings just above a guard page (a PROT_NONE
# mapping that ends where they begin), as glibc's pthread_create maps them
python3 - "$pid" <<'PY'
import collections, re, sys
pid = sys.argv[1]
rss, pss, name, guard_end = collections.Counter(), collections.Counter(), None, None
for line in open(f"/proc/{pid}/smaps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+ *(.*)", line)
    if m:
        lo, hi, perms, name = int(m[1], 16), int(m[2], 16), m[3], m[4].strip()
        if not name:
            name = "[thread stacks]" if lo == guard_end and perms.startswith("rw") else "[anon]"
        guard_end = hi if perms == "---p" and not m[4].strip() else None
        name = re.sub(r"\.so.*", ".so", name.rsplit("/", 1)[-1])
    elif line.startswith("Rss:"):
        rss[name] += int(line.split()[1])
    elif line.startswith("Pss:"):
        pss[name] += int(line.split()[1])
for k, v in rss.most_common():
    if v:
        print(f"{v:8d} {pss[k]:8d}  {k}")
PY
echo
echo "threads by name:"
cat /proc/"$pid"/task/*/comm | sed 's/[0-9]\+/#/g' | sort | uniq -c | sort -rn
command -v gdb >/dev/null || exit 0
echo
echo "threads by the function that started them (gdb):"
gdb -p "$pid" -batch -ex "thread apply all bt" 2>/dev/null |
    awk '/^Thread / { if (f != "") print f; f = "" }
         / in [a-zA-Z_0-9]+ \(/ && $0 !~ / in (start_thread|clone3?|__GI___clone3?) / { for (i = 1; i <= NF; i++) if ($i == "in") f = $(i + 1) }
         END { if (f != "") print f }' | sort | uniq -c | sort -rn
echo
echo "jemalloc's stats (MiB; allocated includes the blocks in threads' caches):"
args=(-ex 'set $p = (unsigned long *)malloc(16)' -ex 'set $p[1] = 8' -ex 'call (int)mallctl("epoch", $p, $p + 1, $p, 8)')
for k in allocated active metadata resident mapped retained tcache_bytes; do
    case $k in tcache_bytes) name=stats.arenas.4096.$k ;; *) name=stats.$k ;; esac
    args+=(-ex 'set $p[1] = 8' -ex "call (int)mallctl(\"$name\", \$p, \$p + 1, 0, 0)"
        -ex "printf \"%-22s %6.1f\\n\", \"$k\", \$p[0] / 1048576.0")
done
gdb -p "$pid" -batch "${args[@]}" 2>/dev/null | grep -E '^[a-z._0-9]+ +[0-9.]+$'
