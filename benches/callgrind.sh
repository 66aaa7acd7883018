#!/usr/bin/env bash
# Instructions, and simulated cache misses, per operation, under callgrind.
#
# For each workload × peer, runs the `instructions` bench binary twice under
# `valgrind --tool=callgrind`: once with `--setup-only` (inputs, structure,
# pre-fill; no measured part) and once in full. Both runs are deterministic
# and identical up to the measured part, and neither frees the structure, so
#
#     per operation = (count of the full run − count of the setup run) / N
#
# where N is the number of operations the binary prints (the workload's
# elements, as in compare.rs). No client requests are needed.
#
# Counts: Ir (instructions executed), and with the cache simulation (on by
# default) D1 misses (D1mr + D1mw: data reads and writes missing the first
# level) and LL misses (ILmr + DLmr + DLmw: missing the last level). The
# simulated caches are given explicitly, because valgrind misreads this VM's
# L3 as a 256 MiB direct-mapped cache: I1 and D1 32 KiB 8-way, LL 32 MiB
# 16-way, 64-byte lines (AMD Zen 4's L1 and L3; callgrind has no L2). Set
# CALLGRIND_CACHES to other --I1/--D1/--LL options to change that. These are
# simulated misses of a two-level cache with no prefetcher, not measured ones.
#
# Usage: bash benches/callgrind.sh [--quick] [--no-cache-sim]
#                                  [--workloads "w3 w4"] [--peers "tickwheel lean_heap"]
#
#   --quick         the quick sizes (every size ÷ 100) instead of compare.rs's full ones
#   --no-cache-sim  instructions only (about three times faster)
#
# Full sizes with the cache simulation take 5 to 20 s per run, 30 runs for
# all five workloads × three peers. The callgrind files are kept in
# target/callgrind/<workload>.<peer>.<setup|full>.out for callgrind_annotate.
# Prints a markdown table.

set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sizes=()
size_name="full sizes"
cache_sim=yes
workloads="w1_insert w1_expire w2 w3 w4"
peers="tickwheel binary_heap lean_heap"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) sizes=(--quick); size_name="quick sizes (÷ 100)" ;;
        --no-cache-sim) cache_sim=no ;;
        --workloads) workloads="$2"; shift ;;
        --peers) peers="$2"; shift ;;
        -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

valgrind=${VALGRIND:-valgrind}
command -v "$valgrind" >/dev/null || { echo "valgrind not found" >&2; exit 1; }
caches=${CALLGRIND_CACHES:---I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64}

# Build, and take the binary's path from cargo's own report of it.
bin=$(cargo bench --no-run --bench instructions --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*instructions-[^"]*\)".*/\1/p' | tail -n 1)
if [ -z "$bin" ]; then
    target=${CARGO_TARGET_DIR:-$root/target}
    bin=$(ls -t "$target"/release/deps/instructions-* 2>/dev/null | grep -v '\.d$' | head -n 1 || true)
fi
[ -x "$bin" ] || { echo "could not build or find the instructions bench binary" >&2; exit 1; }

out=${CARGO_TARGET_DIR:-$root/target}/callgrind
mkdir -p "$out"

# The total of event $2 (Ir, D1mr, …) in callgrind file $1; 0 if absent.
total() {
    awk -v want="$2" '
        /^events:/ { for (i = 2; i <= NF; i++) if ($i == want) col = i - 1 }
        /^summary:/ { if (col) print $(col + 1); else print 0; found = 1; exit }
        END { if (!found) print 0 }
    ' "$1"
}

# The sum of events $2… in file $1.
sum() {
    local file=$1 n=0 event
    shift
    for event in "$@"; do
        n=$((n + $(total "$file" "$event")))
    done
    echo "$n"
}

# Runs one workload × peer in mode $3 (setup|full); prints N.
run() {
    local workload=$1 peer=$2 mode=$3 args
    args=(--workload "$workload" --peer "$peer" "${sizes[@]}")
    [ "$mode" = setup ] && args+=(--setup-only)
    local cache_args=(--cache-sim=no)
    # shellcheck disable=SC2206 # word splitting of the cache options is wanted
    [ "$cache_sim" = yes ] && cache_args=(--cache-sim=yes $caches)
    "$valgrind" -q --tool=callgrind "${cache_args[@]}" \
        --callgrind-out-file="$out/$workload.$peer.$mode.out" \
        "$bin" "${args[@]}" >"$out/$workload.$peer.$mode.log" 2>&1
    sed -n 's/^operations: //p' "$out/$workload.$peer.$mode.log"
}

per_op() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.2f", (a - b) / n }'; }

echo "machine: $("$bin" --machine)"
echo "$("$valgrind" --version), callgrind; $size_name"
if [ "$cache_sim" = yes ]; then
    echo "simulated caches: $caches"
fi
echo
if [ "$cache_sim" = yes ]; then
    echo "| workload | peer | operations | instructions/op | D1 misses/op | LL misses/op |"
    echo "|---|---|---:|---:|---:|---:|"
else
    echo "| workload | peer | operations | instructions/op |"
    echo "|---|---|---:|---:|"
fi
started=$SECONDS
for workload in $workloads; do
    for peer in $peers; do
        n_setup=$(run "$workload" "$peer" setup)
        n=$(run "$workload" "$peer" full)
        if [ -z "$n" ] || [ "$n" != "$n_setup" ] || [ "$n" -eq 0 ]; then
            echo "$workload × $peer failed: see $out/$workload.$peer.*.log" >&2
            exit 1
        fi
        full=$out/$workload.$peer.full.out
        setup=$out/$workload.$peer.setup.out
        row="| $workload | $peer | $n | $(per_op "$(total "$full" Ir)" "$(total "$setup" Ir)" "$n")"
        if [ "$cache_sim" = yes ]; then
            d1=$(per_op "$(sum "$full" D1mr D1mw)" "$(sum "$setup" D1mr D1mw)" "$n")
            ll=$(per_op "$(sum "$full" ILmr DLmr DLmw)" "$(sum "$setup" ILmr DLmr DLmw)" "$n")
            row="$row | $d1 | $ll"
        fi
        echo "$row |"
    done
done
echo
echo "($((SECONDS - started)) s under callgrind; files in $out)"
