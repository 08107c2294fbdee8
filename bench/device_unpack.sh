# Sourced by a device call's steps (bench/results/*/device_steps_N.sh) on the device machine, after
# bench/device_prepare.sh here and a call carrying [".packs", ".panda"]:
#   source bench/device_unpack.sh DIR
# unpacks .packs/new.tar.gz into DIR/new, puts its libraries on LD_LIBRARY_PATH, sets P=DIR, prints
# the pack's first lines (its source and commit) and links tandem, tandemd and ompl_plan (when packed) where
# the suites that run them look for them (build/tools, build/daemon of this tree; a real build's binaries there are
# left alone).
P=${1:?DIR}
mkdir -p "$P/new"
tar xzf .packs/new.tar.gz -C "$P/new"
export LD_LIBRARY_PATH=$P/new/lib
head -3 "$P/new/PACK_INFO"
mkdir -p build/daemon build/tools build/examples/ompl
for b in tools/tandem daemon/tandemd examples/ompl/ompl_plan; do
    [[ -e $P/new/bin/${b##*/} ]] || continue
    [[ -e build/$b && ! -L build/$b ]] || ln -sf "$P/new/bin/${b##*/}" "build/$b"
done
