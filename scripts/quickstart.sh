#!/usr/bin/env bash
# Quick start: installs the dependencies, builds, and runs the main job on the embedded
# default (a local SQLite file ./dsgd.db, 2 local MPI workers): linear SVM on
# Fashion-MNIST with synchronous SGD, then the same with Local SGD (H=8) for contrast,
# then lists the stored runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh dsgd-bench
./build/dsgd-bench run --workers 2 --workload svm --dataset fashion-mnist --algo ssgd \
  --batch 64 --lr 0.05 --epochs 2 --target acc=0.80 --tag quickstart
echo
./build/dsgd-bench run --workers 2 --workload svm --dataset fashion-mnist --algo localsgd --period 8 \
  --batch 64 --lr 0.05 --epochs 2 --target acc=0.80 --tag quickstart | tail -n 18
echo
./build/dsgd-bench runs --limit 10
