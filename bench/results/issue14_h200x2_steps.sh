set -uo pipefail
# Written in the thirty-fourth session (issue 14, point 9: the two-GPU figure). Run after a minimal pack
# of the session's build (MINIMAL=1 ARCHIVE=1 TESTS="" bench/device_pack.sh build .packs/new; then
# rm -rf .packs/new) and the two OMPL scenes' canonical meshes copied into .scenes/canonical
# (../shared/scenes/ompl/canonical/{alpha-1.5,Apartment}.{env,robot}.obj; their .cfg in .scenes/), carrying [".packs", ".scenes"],
# on a two-GPU machine: device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_steps.sh".
# tandemd on one GPU (--gpu-devices 0) against both (all), 64 clients keeping 4 requests of 1024 poses in
# flight, 5 s a row (bench/run_gpus.sh).
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
nproc; nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader; nvidia-smi topo -m 2>&1 | head -6
DEVICE_LISTS=${DEVICE_LISTS:-"0 all"} SCENES="alpha-1.5 Apartment" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 BATCH=1024 \
  INFLIGHT=4 DURATION=${DURATION:-5} PACK=/tmp/px/new bash bench/run_gpus.sh $OUT/gpus_h200x2.md > $OUT/gpus.log 2>&1
echo "run_gpus exit $?"; cat $OUT/gpus_h200x2.md
echo "done at ${SECONDS}s"
