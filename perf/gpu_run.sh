#!/usr/bin/env bash
# Everything dfgnn checks and measures on a GPU machine, in one go:
#   tests    the CUDA-native GPU suite, then all of it under compute-sanitizer memcheck, and
#            the Kokkos suite built against a CUDA-enabled Kokkos (portable + native paths)
#   racecheck the CUDA-native GPU suite under compute-sanitizer racecheck (1.5-3 s a test in
#            one process; shards overlap one's host work with another's kernels, which gains up
#            to about 8 shards: the whole suite took 8 minutes in 16 on the H100 machine)
#   kokkos   portable Kokkos kernels vs CUDA-native on the GPU (dfgnn bench --backend all), and
#            with KOKKOS_BASE=DIR (DIR/dfgnn: the same build of the base commit) the A/B of the
#            portable path every change to backends/kokkos gets: both binaries interleaved, two
#            rounds in flipped order, forward and forward + backward (OUT/portable_ab.jsonl)
#   study    dfgnn study: the GPU's record (docs/study.md; the real graphs from DATA) in OUT/study.json
#   bench    perf/run_bench.py: ours vs PyG vs cuSPARSE on the anchors' graphs, on the GPU of
#            OUT/study.json where the study step made it (else run_bench.py records the platform)
#   backward the CUDA-native training forward + backward (dfgnn bench --backward --check)
# The sanitizers run SANITIZER_SHARDS gtest shards at once (default: one a core, at most 16).
# GTEST_FILTER (gtest's own variable) narrows every gtest run (both suites, the sanitizers) to the
# cases a change touched, e.g.
#   GTEST_FILTER='*EdgeColumnsCuda*' perf/gpu_run.sh BIN DATA OUT racecheck
# Usage: perf/gpu_run.sh BIN DATA OUT [tests|racecheck|kokkos|study|bench|backward|all] [extra run_bench.py args]
#   BIN   dfgnn, dfgnn_gpu_tests, cusparse_pipeline (cuda preset + perf build) and kokkos/{dfgnn,
#         dfgnn_tests} (a build against a CUDA-enabled Kokkos with DFGNN_ENABLE_CUDA)
#   DATA  the shared/data folder (real graphs)
set -uo pipefail
SANITIZER_SHARDS=${SANITIZER_SHARDS:-$(($(nproc) < 16 ? $(nproc) : 16))}  # more share one GPU for nothing
bin=$(realpath "$1") data=$(realpath "$2") out=$3 what=${4:-all}
shift $(($# < 4 ? $# : 4))
mkdir -p "$out"
status=0
step() { echo "== $*"; }
# sanitize TOOL: the GPU suite under compute-sanitizer TOOL, in SANITIZER_SHARDS gtest shards at once
sanitize() {
  local tool=$1 start=$SECONDS i
  step "compute-sanitizer $tool (GPU suite${GTEST_FILTER:+ $GTEST_FILTER}, $SANITIZER_SHARDS shards)"
  for ((i = 0; i < SANITIZER_SHARDS; ++i)); do
    GTEST_TOTAL_SHARDS=$SANITIZER_SHARDS GTEST_SHARD_INDEX=$i compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$bin/dfgnn_gpu_tests" >"$out/$tool-$i.log" 2>&1 &
  done
  for ((i = 0; i < SANITIZER_SHARDS; ++i)); do wait -n || status=1; done
  grep -h -E "SUMMARY|PASSED|FAILED" "$out/$tool"-*.log | sort | uniq -c
  echo "$tool: $((SECONDS - start)) s"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

if [[ $what == tests || $what == all ]]; then
  step "CUDA-native GPU tests"
  "$bin/dfgnn_gpu_tests" --gtest_brief=1 >"$out/gpu_tests.log" 2>&1 || status=1
  tail -n 3 "$out/gpu_tests.log"
  sanitize memcheck
  if [[ -x $bin/kokkos/dfgnn_tests ]]; then
    step "Kokkos suite on Kokkos::Cuda (portable and CUDA-native through the Kokkos API)"
    (cd "$bin/kokkos" && ./dfgnn_tests --gtest_brief=1) >"$out/kokkos_tests.log" 2>&1 || status=1
    tail -n 3 "$out/kokkos_tests.log"
  fi
fi

if [[ $what == racecheck || $what == all ]]; then sanitize racecheck; fi

if [[ ($what == kokkos || $what == all) && -x $bin/kokkos/dfgnn ]]; then
  step "portable Kokkos vs CUDA-native"
  work=$(mktemp -d)
  "$bin/dfgnn" gen sbm --kind pattern --graphs 1024 --out "$work/pattern.txt" >/dev/null
  "$bin/dfgnn" gen rmat --scale 17 --edge-factor 64 --out "$work/rmat17.txt" >/dev/null
  for g in "$data/cora/planetoid_edges.tsv.gz --symmetrize" "$work/pattern.txt" "$work/rmat17.txt"; do
    for model in gt gat; do
      for hd in "1 128" "4 32"; do
        read -r heads dim <<<"$hd"
        # shellcheck disable=SC2086  # $g carries the file and its flags
        "$bin/kokkos/dfgnn" bench --graph $g --model $model --heads $heads --dim $dim --backend all \
          --strategy auto,smmf,pmf,online --json "$out/kokkos_vs_native.jsonl" || status=1
      done
    done
  done | tee "$out/kokkos_vs_native.txt"
  if [[ -n ${KOKKOS_BASE:-} ]]; then
    step "portable A/B: $KOKKOS_BASE/dfgnn (base) against $bin/kokkos/dfgnn (change)"
    for round in 1 2; do
      order="base change" && [[ $round == 2 ]] && order="change base"
      for g in pattern rmat17; do
        for model in gt agnn gat gatv2; do
          for hd in "1 128" "4 32"; do
            read -r heads dim <<<"$hd"
            for which in $order; do
              cli=$bin/kokkos/dfgnn && [[ $which == base ]] && cli=$KOKKOS_BASE/dfgnn
              "$cli" bench --graph "$work/$g.txt" --name "$which/$g" --model $model --heads $heads --dim $dim \
                --backend kokkos --strategy online --backward --iters 10 --warmup 3 \
                --json "$out/portable_ab.jsonl" >/dev/null || status=1
            done
          done
        done
      done
    done
    python3 - "$out/portable_ab.jsonl" <<'PY'
import collections, json, statistics, sys
t = collections.defaultdict(lambda: collections.defaultdict(list))
for r in map(json.loads, open(sys.argv[1])):
    which, graph = r["name"].split("/")
    t[(graph, r["model"], f'{r["H"]}x{r["D"]}', r["pass"])][which].append(r["ms"])
for k, v in sorted(t.items()):
    b, c = statistics.median(v["base"]), statistics.median(v["change"])
    print(*k, f"base {b:.3f} ms, change {c:.3f} ms, change/base {c / b:.3f}")
PY
  fi
fi

if [[ $what == backward || $what == all ]]; then
  step "CUDA-native forward + backward"
  work=$(mktemp -d)
  for g in ${BWD_GRAPHS:-cora pubmed pattern rmat-s17-d64}; do
    case $g in
      cora | citeseer | pubmed) file="$data/$g/planetoid_edges.tsv.gz --symmetrize" ;;
      tolokers) file="$data/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize" ;;
      web-NotreDame) file="$data/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize" ;;
      pattern | cluster) file=$work/$g.txt && "$bin/dfgnn" gen sbm --kind $g --graphs 1024 --out $file >/dev/null ;;
      mnist) file=$work/$g.txt && "$bin/dfgnn" gen knn --graphs 1024 --k 8 --out $file >/dev/null ;;
      rmat-s17-d64) file=$work/$g.txt && "$bin/dfgnn" gen rmat --scale 17 --edge-factor 64 --out $file >/dev/null ;;
      *) echo "gpu_run: unknown graph $g" && continue ;;
    esac
    for model in gt agnn gat gatv2; do
      for hd in "1 128" "4 32"; do
        read -r heads dim <<<"$hd"
        # shellcheck disable=SC2086  # $file carries the file and its flags
        "$bin/dfgnn" bench --graph $file --name $g --model $model --heads $heads --dim $dim --backend cuda \
          --strategy auto --backward --check --iters 10 --warmup 3 --json "$out/backward.jsonl" || status=1
      done
    done
  done | tee -a "$out/backward.txt"
fi

if [[ $what == study || $what == all ]]; then
  step "dfgnn study"
  "$bin/dfgnn" study --data "$data" --out "$out/study.json" >"$out/study.log" 2>&1 || status=1
  tail -n 1 "$out/study.log"
fi

if [[ $what == bench || $what == all ]]; then
  step "benchmark: ours vs PyG vs cuSPARSE"
  platform=()
  [[ -f $out/study.json ]] && platform=(--study "$out/study.json")
  python3 perf/run_bench.py --data "$data" --dfgnn "$bin/dfgnn" --cusparse "$bin/cusparse_pipeline" \
    --results "$out/bench" "${platform[@]}" "$@" >"$out/bench.log" 2>&1 || status=1
  sed -n '/^| graph/,$p' "$out/bench/table.md" 2>/dev/null | head -n 80
fi
echo "gpu_run: status $status"
exit $status
