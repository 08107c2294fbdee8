#!/usr/bin/env bash
# Packs a build's executables with the shared libraries they need, so that they run on a machine
# that has none of our libraries installed (the device machine: no apt, no libuv, protobuf-c,
# assimp, jansson, criterion, ...). Used with bench/compare_builds.sh.
#
#   bench/device_pack.sh BUILD_DIR DEST
#
# DEST/bin: tools/tandem, daemon/tandemd, bench/bench_server, bench/bench_cpu, bench/bench_config_latency, bench/bench_socket_rtt, bench/bench_robot_server, examples/ompl/ompl_plan
#   (and bench/bench_upload_wait with UPLOAD_WAIT=1, and bench/bench_pool_cost, whatever MINIMAL or OMPL)
#   (bench/run_ompl.sh: OMPL_PLAN=DEST/bin/ompl_plan TANDEMD=DEST/bin/tandemd) and the tests/test_*
#   executables that exist in BUILD_DIR, stripped (strip --strip-unneeded, on the copies).
# DEST/lib: every shared library they load (ldd) except glibc's, libstdc++ and libgcc_s
#   (linux-vdso, ld-linux, libc, libm, libpthread, libdl, librt, libresolv, libutil, libgcc_s,
#   libstdc++): those are taken from the host. The CUDA driver (libcuda) is never packed; the CUDA
#   runtime is linked statically. Libraries are stored under the name the executables ask for.
# DEST/PACK_INFO: where the pack came from (build directory, commit, build type, CUDA on/off).
#
# Run a packed executable as: LD_LIBRARY_PATH=DEST/lib DEST/bin/tandem ... (LD_LIBRARY_PATH is
# searched before the executables' RUNPATH, which points into BUILD_DIR).
# Knobs: MINIMAL=1 packs only what compare_builds.sh runs (tandem, tandemd, bench_server), which
# leaves out bench_cpu's FCL and the tests' criterion (and its libgit2, krb5, mbedtls, nanomsg):
# about 28 MB instead of 51 for a CUDA build. TESTS="gpu scheduler ..." packs only those test suites
# (test_gpu, test_scheduler, ...; TESTS="" none). OMPL=1 packs only what bench/run_ompl.sh runs (tandem,
# tandemd, ompl_plan; with TESTS set, those suites too). ARCHIVE=1 also writes DEST.tar.gz (DEST's content,
# about a third of its size), which compare_builds.sh takes in place of the folder: two full
# folders would not fit in the 64 MiB that travel to the device machine. STRIP=0 keeps the
# executables' symbol tables (for perf on the device machine; the libraries are stripped anyway).
# Needs ldd and strip (binutils); fails if an executable needs a library ldd cannot find.
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: bench/device_pack.sh BUILD_DIR DEST" >&2
    exit 2
fi
build=$1
dest=$2
MINIMAL=${MINIMAL:-0}
OMPL=${OMPL:-0}
[[ -d $build ]] || { echo "device_pack.sh: $build is not a directory" >&2; exit 1; }
command -v strip > /dev/null || { echo "device_pack.sh: strip (binutils) is missing" >&2; exit 1; }

exes=()
for f in "$build"/tools/tandem "$build"/daemon/tandemd "$build"/bench/bench_server "$build"/bench/bench_cpu "$build"/bench/bench_config_latency "$build"/bench/bench_socket_rtt "$build"/bench/bench_robot_server \
         $([[ ${UPLOAD_WAIT:-0} == 1 ]] && echo "$build"/bench/bench_upload_wait) \
         "$build"/bench/bench_pool_cost "$build"/examples/ompl/ompl_plan "$build"/tests/test_*; do
    [[ -f $f && -x $f ]] || continue
    [[ $f == */bench/bench_upload_wait || $f == */bench/bench_pool_cost ]] && { exes+=("$f"); continue; }
    if [[ -n ${TESTS+x} && $f == */tests/test_* ]]; then # the suites named, whatever MINIMAL or OMPL
        [[ " $TESTS " == *" ${f##*/test_} "* ]] || continue
    else
        [[ $MINIMAL == 1 && $f != */tools/tandem && $f != */daemon/tandemd && $f != */bench/bench_server ]] && continue
        [[ $OMPL == 1 && $f != */tools/tandem && $f != */daemon/tandemd && $f != */examples/ompl/ompl_plan ]] && continue
    fi
    exes+=("$f")
done
for need in tools/tandem daemon/tandemd bench/bench_server; do
    [[ -x $build/$need ]] || echo "device_pack.sh: warning: $build/$need is missing (not built?)" >&2
done
(( ${#exes[@]} )) || { echo "device_pack.sh: no executables found in $build" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"

# glibc, libstdc++ and libgcc_s come from the host; libcuda from its driver.
skip_re='^(linux-vdso|linux-gate|ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libgcc_s|libstdc\+\+|libcuda|libnvidia-[^/]*)\.so'

declare -A libs=()   # soname -> path
missing=()
for f in "${exes[@]}"; do
    cp "$f" "$dest/bin/"
    [[ ${STRIP:-1} == 1 ]] && strip --strip-unneeded "$dest/bin/$(basename "$f")"
    # lines: "name => /path (addr)", "name => not found", "/lib64/ld-linux... (addr)", "linux-vdso..."
    while read -r name arrow path _; do
        [[ $arrow == "=>" ]] || continue
        [[ $name =~ $skip_re ]] && continue
        if [[ $path == not || ! -f $path ]]; then
            missing+=("$(basename "$f"): $name")
            continue
        fi
        libs[$name]=$path
    done < <(ldd "$f")
done
if (( ${#missing[@]} )); then
    printf 'device_pack.sh: library not found: %s\n' "${missing[@]}" >&2
    exit 1
fi
for name in "${!libs[@]}"; do
    cp -L "${libs[$name]}" "$dest/lib/$name"
    chmod u+w "$dest/lib/$name"
    strip --strip-unneeded "$dest/lib/$name" 2>/dev/null || true
done

# The packed executables must find every packed library through LD_LIBRARY_PATH alone.
for f in "$dest"/bin/*; do
    if LD_LIBRARY_PATH=$dest/lib ldd "$f" | grep -q 'not found'; then
        echo "device_pack.sh: $f still misses a library:" >&2
        LD_LIBRARY_PATH=$dest/lib ldd "$f" | grep 'not found' >&2
        exit 1
    fi
done

src=$(cd "$build" && pwd)
home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
commit=unknown
if [[ -n $home ]]; then
    commit=$(git -C "$home" rev-parse --short HEAD 2>/dev/null || echo unknown)
    # a tree with local changes is not the commit alone
    if [[ $commit != unknown ]] && ! git -C "$home" diff --quiet HEAD -- 2>/dev/null; then commit+="+local-changes"; fi
fi
{
    echo "build_dir=$src"
    echo "source=${home:-unknown}"
    echo "commit=$commit (the source tree when packed, not necessarily what was built)"
    echo "build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)"
    echo "cuda=$(sed -n 's/^TANDEM_CUDA:BOOL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)"
    echo "packed=$(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n), $(ldd --version | head -1)"
    echo "bin=$(cd "$dest/bin" && echo *)"
    echo "lib=$(cd "$dest/lib" && echo *)"
    # what the host must provide: glibc and libstdc++ at least these versions
    echo "needs=$(objdump -T "$dest"/bin/* "$dest"/lib/* 2>/dev/null | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -1)" \
         "$(objdump -T "$dest"/bin/* "$dest"/lib/* 2>/dev/null | grep -oE 'GLIBCXX_[0-9.]+' | sort -uV | tail -1)"
} > "$dest/PACK_INFO"
if [[ ${ARCHIVE:-0} == 1 ]]; then
    tar czf "$dest.tar.gz" -C "$dest" PACK_INFO bin lib
fi

size=$(du -sb "$dest" | cut -f1)
mb() { awk -v s="$1" 'BEGIN { printf "%.1f MB", s / 1e6 }'; }
msg="device_pack.sh: $dest: ${#exes[@]} executables, ${#libs[@]} libraries, $(mb "$size")"
msg+=" (bin $(mb "$(du -sb "$dest/bin" | cut -f1)"), lib $(mb "$(du -sb "$dest/lib" | cut -f1)"))"
[[ ${ARCHIVE:-0} == 1 ]] && msg+="; $dest.tar.gz: $(mb "$(stat -c %s "$dest.tar.gz")")"
echo "$msg"
