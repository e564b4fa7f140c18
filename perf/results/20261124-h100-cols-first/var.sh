#!/usr/bin/env bash
# usage: bash .carry/ab/var.sh OUT ROUNDS VARIANTS CASES -- interleaved A/B of CLI variants (backward)
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; rounds=$2; vars=$3; cases=$4; mkdir -p $out /tmp/ab /tmp/g
for v in $vars; do xz -dc .carry/ab/$v.xz > /tmp/ab/$v & done; wait; chmod +x /tmp/ab/*
N=/tmp/ab/$(echo $vars | cut -d' ' -f1)
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern >/dev/null
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cluster]=/tmp/g/cluster [pattern]=/tmp/g/pattern [mnist]=/tmp/g/mnist [rmat]=/tmp/g/rmat
  [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize" [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize"
  [web]=".carry/sd/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize")
for round in $(seq 1 $rounds); do
  for g in cluster pattern mnist pubmed tolokers rmat web; do
    for c in $cases; do IFS=: read -r m h d <<<"$c"
      for v in $vars; do
        /tmp/ab/$v bench --graph ${F[$g]} --name $g --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
          | awk -v r=$round -v g=$g -v c=$c -v v=$v '$NF=="bwd"||$NF=="fwd+bwd" {print r, g, c, v, $NF, $4}'
      done
    done
  done
done | tee $out/ab-raw.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/ab.txt
grep " bwd " $out/ab.txt
