#!/bin/sh
# tests/gpu/prepare.sh — build here, on a machine with nvcc (no GPU needed),
# everything the one-call device check (tests/gpu/run.sh) needs, into ONE
# folder, _gpu/ at the top of the repo (gitignored; name it in the device
# tool's `carry`). See tests/gpu/README.md.
#
#   tests/gpu/prepare.sh [--keep-build]
#
# The device machine (/work/.library/device/HOPPER.md, KINDS.md) has CUDA 13
# and PyTorch's Python wheels (cuBLAS, NCCL, cuDNN) but none of dt's Debian
# packages (libltdl, libinih, zlib, libpng, libjpeg, OpenSSL, cmocka, ...)
# and no package registry. So this script:
#   1. configures and builds dt in _build-gpu/ WITHOUT OpenBLAS (Debian's
#      libopenblas is 36 MB, with libgfortran 39 MB: too much for the 64 MiB
#      that travels with a call, next to the data set; the GPU check does no
#      CPU matrix work worth timing, and the CPU references in the GPU tests
#      then use dt's plain loops, which are exact enough);
#   2. copies dtctl, dt-train, the allreduce bench worker, libdt, the
#      plugins, dt-cuda-backend.so, the GPU test programs, the allreduce
#      example and tests/gpu/allreduce_mem.c (built here), the example job
#      files and Fashion-MNIST into _gpu/;
#   3. copies every shared library they need that is neither CUDA's (found
#      there: /usr/local/cuda, the Python wheels' site-packages/nvidia/*)
#      nor the base system's (glibc, libstdc++, libgcc_s) into _gpu/lib,
#      strips everything, and checks with ldd that every ELF file resolves
#      against _gpu/lib + CUDA + the base system alone;
#   4. reports the folder's size and the size of what travels.
# run.sh sets LD_LIBRARY_PATH (no patchelf here; the binaries' RUNPATH
# points into this machine's build tree and /usr/local/cuda/lib64, which
# LD_LIBRARY_PATH precedes).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build="$top/_build-gpu"
out="$top/_gpu"
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=$(nproc 2>/dev/null || echo 4)
keep=no
[ "${1:-}" = "--keep-build" ] && keep=yes

say() { echo "prepare: $*"; }
die() { echo "prepare: ERROR: $*" >&2; exit 1; }

command -v "$cuda/bin/nvcc" >/dev/null || die "no nvcc in $cuda/bin: the CUDA backend cannot be built"
[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi >/dev/null) ||
    die "no ./configure and autoreconf failed (run ./bootstrap.sh build once)"

# ---- 1. build ---------------------------------------------------------------
# pkg-config that knows no openblas: configure then reports "OpenBLAS: no".
mkdir -p "$build"
cat >"$build/pkg-config-no-openblas" <<'EOF'
#!/bin/sh
for a in "$@"; do case "$a" in openblas*) exit 1 ;; esac; done
exec pkg-config "$@"
EOF
chmod +x "$build/pkg-config-no-openblas"
if [ "$keep" = no ] || [ ! -f "$build/Makefile" ]; then
    say "configure in $build (CUDA $cuda, no OpenBLAS)"
    (cd "$build" && PKG_CONFIG="$build/pkg-config-no-openblas" \
        "$top/configure" --with-cuda="$cuda" >configure.out 2>&1) ||
        { tail -30 "$build/configure.out"; die "configure failed"; }
fi
grep -q "layers on CUDA *: yes" "$build/configure.out" ||
    { grep -A30 "^  CUDA" "$build/configure.out" || true; die "configure did not enable the CUDA layers"; }
grep -q "NCCL *: yes\|nccl.*yes" "$build/configure.out" ||
    say "warning: configure's summary does not say NCCL yes"
say "make -j$jobs"
make -C "$build" -j"$jobs" >"$build/make.out" 2>&1 ||
    { tail -30 "$build/make.out"; die "make failed"; }
make -C "$build/tests" -j"$jobs" test_nn_cuda test_optimizers_cuda \
    test_cuda_backend >>"$build/make.out" 2>&1 ||
    { tail -30 "$build/make.out"; die "building the GPU tests failed"; }
make -C "$build/examples" allreduce >>"$build/make.out" 2>&1 || true
gcc -O2 -Wall -Wextra -I"$top/include" -I"$build" \
    -o "$build/allreduce_mem" "$here/allreduce_mem.c" \
    -L"$build/core/.libs" -ldt ||
    die "building tests/gpu/allreduce_mem.c failed"

# ---- 2. stage ---------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/plugins/modules" "$out/tests" \
    "$out/conf" "$out/data/fashion-mnist"
# The real ELF file behind a libtool wrapper (dir/.libs/name) or name itself.
real() {
    d=$(dirname "$1"); b=$(basename "$1")
    if [ -f "$d/.libs/$b" ]; then echo "$d/.libs/$b"; else echo "$1"; fi
}
cp "$(real "$build/core/dtctl")" "$(real "$build/core/dt-train")" "$out/bin/"
cp "$(real "$build/bench/dt_allreduce_bench")" "$out/bin/" ||
    die "bench/dt_allreduce_bench is not built"
cp -L "$build/core/.libs/libdt.so.1" "$out/lib/"
[ -e "$build/core/.libs/libdt_private.so.0" ] &&
    cp -L "$build/core/.libs/libdt_private.so.0" "$out/lib/"
# Plugins a GPU job on one host uses: the local launcher and storage, tcp
# and nccl, the optimizers, and the CUDA backend (searched like a plugin).
for p in dt_launcher_local dt_storage_local dt_transport_tcp \
         dt_transport_nccl dt_optimizer_sgd dt_optimizer_adam \
         dt_optimizer_adamw dt_optimizer_lars dt_optimizer_lamb \
         dt-cuda-backend; do
    [ -e "$build/plugins/modules/$p.so" ] || die "plugin $p.so is not built"
    cp -L "$build/plugins/modules/$p.so" "$out/plugins/modules/"
done
for t in test_nn_cuda test_optimizers_cuda test_cuda_backend; do
    cp "$(real "$build/tests/$t")" "$out/tests/"
done
[ -e "$build/examples/allreduce" ] && cp "$(real "$build/examples/allreduce")" "$out/tests/"
cp "$build/allreduce_mem" "$out/tests/"
cp "$top"/conf/examples/fashion-mnist-*.ini "$out/conf/"
data=/usr/share/datasets/fashion-mnist
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
         t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -e "$data/$f" ] || die "$data/$f missing (Debian: dataset-fashion-mnist)"
    cp "$data/$f" "$out/data/fashion-mnist/"
done

# ---- 3. libraries -----------------------------------------------------------
# Found on the device machine: glibc, libstdc++/libgcc_s (Ubuntu 24.04,
# newer than ours), and CUDA's (toolkit or the wheels). Everything else that
# an ELF file here needs is copied.
base_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)'
cuda_re='^(libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnccl\.so|libcudnn[a-z_]*\.so|libnvrtc|libnvJitLink|libcurand|libcusparse|libcufft)'
elfs() {
    find "$out/bin" "$out/lib" "$out/plugins" "$out/tests" -type f |
        while read -r f; do
            case "$(head -c4 "$f" | od -An -c | tr -d ' ')" in
                177ELF) echo "$f" ;;
            esac
        done
}
export LD_LIBRARY_PATH="$out/lib:$cuda/lib64"
changed=1
while [ $changed = 1 ]; do
    changed=0
    for f in $(elfs); do
        ldd "$f" 2>/dev/null | awk '/=>/ {print $1, $3}' |
        while read -r name path; do
            echo "$name" | grep -Eq "$base_re|$cuda_re" && continue
            [ -e "$out/lib/$name" ] && continue
            case "$path" in /*) ;; *) continue ;; esac
            cp -L "$path" "$out/lib/$name"
            echo "$name" >>"$build/copied.txt"
        done
    done
    # A library copied in this pass may need others: go round again.
    n=$(ls "$out/lib" | wc -l)
    [ "${last_n:-0}" != "$n" ] && changed=1
    last_n=$n
done
# dt's own files only: Debian's libraries come stripped (and binutils'
# strip was seen to crash on libz.so.1).
for f in $(elfs); do
    case "$f" in "$out"/lib/*) case "${f##*/}" in libdt*) ;; *) continue ;; esac ;; esac
    chmod u+w "$f"
    strip --strip-unneeded "$f" 2>"$build/strip.err" ||
        say "warning: strip $f: $(cat "$build/strip.err")"
done

# ---- 4. check ---------------------------------------------------------------
# Every dependency of every ELF file resolves to _gpu/lib, CUDA's, or the
# base system's; none to this machine's build tree or /usr/lib beyond base.
bad=0
: >"$out/ldd.txt"
for f in $(elfs); do
    rel=${f#"$out"/}
    echo "== $rel" >>"$out/ldd.txt"
    ldd "$f" 2>&1 | awk '/=>/ {print $1, $3}' | while read -r name path; do
        if [ "$path" = "not" ]; then
            echo "  $name NOT FOUND" >>"$out/ldd.txt"
            echo "MISSING $rel: $name"
        elif echo "$name" | grep -Eq "$cuda_re"; then
            echo "  $name cuda ($path)" >>"$out/ldd.txt"
        elif echo "$name" | grep -Eq "$base_re"; then
            echo "  $name base ($path)" >>"$out/ldd.txt"
        else
            case "$path" in
                "$out"/lib/*) echo "  $name carried" >>"$out/ldd.txt" ;;
                *) echo "  $name OUTSIDE ($path)" >>"$out/ldd.txt"
                   echo "OUTSIDE $rel: $name => $path" ;;
            esac
        fi
    done
done >"$build/ldd-problems.txt"
if [ -s "$build/ldd-problems.txt" ]; then
    cat "$build/ldd-problems.txt"
    bad=1
fi
{
    echo "dt GPU check bundle, made by tests/gpu/prepare.sh"
    echo "commit: $(cd "$top" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$top" && git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
    echo "made: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n), $(ldd --version | head -1)"
    echo "nvcc: $("$cuda/bin/nvcc" --version | tail -1)"
    echo "configure: $(grep -E 'layers on CUDA|OpenBLAS|NCCL' "$build/configure.out" | tr -s ' ' | tr '\n' ';')"
    echo "carried libraries: $(ls "$out/lib" | tr '\n' ' ')"
    echo
    (cd "$out" && find . -type f | sort | xargs ls -l | awk '{printf "%10d %s\n", $5, $9}')
} >"$out/MANIFEST.txt"

size_kib=$(du -sk "$out" | cut -f1)
tree_kib=$(cd "$top" && git ls-files -z --cached --others --exclude-standard |
           xargs -0 du -ckL 2>/dev/null | tail -1 | cut -f1)
total=$((size_kib + tree_kib))
say "carried libraries: $(ls "$out/lib" | tr '\n' ' ')"
say "folder $out: $((size_kib / 1024)) MiB ($size_kib KiB); the rest of the working tree: $((tree_kib / 1024)) MiB; travels: about $((total / 1024)) MiB of 64"
[ $total -lt $((62 * 1024)) ] || { say "TOO BIG to travel (64 MiB)"; bad=1; }
if [ $bad = 0 ]; then
    say "ldd: every ELF file resolves against _gpu/lib + CUDA + the base system (details: _gpu/ldd.txt)"
    say "ok: now tests/gpu/run.sh --dry here, then the device call in tests/gpu/README.md"
else
    die "see above"
fi
