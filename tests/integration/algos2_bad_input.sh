# Bad input for the part-2 variants: a knob of another algorithm, bad values, a topology
# dpsgd cannot use, a model too small for zero. Each fails with one message naming the flag.
source "$(dirname "$0")/common.bash"


R=("$BIN" run --db t.db --steps 5 --batch 16 --dataset "$SMALL")
expect_error "--dpsgd-delay: applies to --algo dpsgd only" "${R[@]}" --algo ssgd --dpsgd-delay 1
expect_error "--dpsgd-delay: must be 0 or 1" "${R[@]}" --algo dpsgd --dpsgd-delay 2
expect_error "--compress: applies to the all-reduce variants ssgd, localsgd, diloco, cocod, dasgd, overlap-local, dreamddp and palsgd, not dpsgd: it exchanges models point-to-point" "${R[@]}" --algo dpsgd --compress topk:0.1
expect_error "--compress: .*not adpsgd: it exchanges models point-to-point with its neighbours \(gossip\)" "${R[@]}" --algo adpsgd --compress topk:0.1
expect_error "--compress: .*not ps: it pushes to and pulls from server shards" "${R[@]}" --algo ps --compress qsgd:bits=4
expect_error "--compress: .*not zero: it shards its collectives .*--zero-bits 4" "${R[@]}" --algo zero --compress qsgd:bits=4
expect_error "--compress zip:3: unknown compressor" "${R[@]}" --compress zip:3
expect_error "--compress topk:2: ratio" "${R[@]}" --compress topk:2
expect_error "--compress qsgd:bits=1" "${R[@]}" --compress qsgd:bits=1
expect_error "--compress powersgd:rank=x" "${R[@]}" --compress powersgd:rank=x
expect_error "--zero-bits: applies to --algo zero only" "${R[@]}" --algo ssgd --zero-bits 4
expect_error "--zero-group: applies to --algo zero only" "${R[@]}" --algo dpsgd --zero-group 64
expect_error "--zero-bits: must be 32 or 4" "${R[@]}" --algo zero --zero-bits 8
# The MPI backend's window path (docs/cluster.md): shared or rma, nothing else.
expect_error "DSGD_MPI_WINDOW=bogus is not a window path" env DSGD_MPI_WINDOW=bogus "${R[@]}" --backend mpi --algo adpsgd
# zero with fewer parameters than workers and dpsgd on a topology without neighbours need
# more ranks than CI runs or a topology no kind builds: tests/unit/test_algos2.cpp pins both.
echo PASS
