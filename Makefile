# chainqueen.h -- `make demo`, `make test`, `make bench`, `make regen`, `make ptx`.
# Nothing here needs a GPU; CUDA steps say what they did or skipped.
CC      ?= cc
CXX     ?= c++
PYTHON  ?= python3
NVCC    ?= nvcc
CFLAGS  ?= -O2
WARN     = -Wall -Wextra -Werror -pedantic
BUILD    = build
OUT      = out
NVCCFLAGS = -arch=compute_75 -Werror all-warnings -diag-suppress 177

.PHONY: all demo test bench bench-fluid bench-peers regen ptx pydeps clean
all: demo

$(BUILD):
	@mkdir -p $(BUILD)

# Generator dependencies (Jinja2, SymPy), pinned: installed only when missing or different.
pydeps: | $(BUILD)
	@$(PYTHON) -c "import jinja2, sympy, sys; sys.exit(0 if (jinja2.__version__, sympy.__version__) == ('3.1.6', '1.14.0') else 1)" 2>/dev/null \
	  || $(PYTHON) -m pip install -q -r generator/requirements.txt

# Regenerates chainqueen.h and cuda/*.cu.  PTX is recompiled only for CUDA modules whose source
# changed, by the pinned NVRTC (generator/requirements-cuda.txt, installed here if missing);
# otherwise it is carried over from the committed header.
regen: pydeps
	@$(PYTHON) -c "import nvidia.cuda_nvrtc" 2>/dev/null || $(PYTHON) -m pip install -q -r generator/requirements-cuda.txt \
	  || echo "regen: the pinned NVRTC could not be installed; changed CUDA modules fall back to nvcc"
	NVCC=$(NVCC) $(PYTHON) -m generator

# Compiles the CUDA sources to PTX (what `make regen` embeds in chainqueen.h, from the same flags).
ptx: | $(BUILD)
	@if command -v $(NVCC) >/dev/null 2>&1; then \
	  for t in 2d_f32 2d_f64 3d_f32 3d_f64; do \
	    $(NVCC) -ptx $(NVCCFLAGS) cuda/chainqueen_kernels_$$t.cu -o $(BUILD)/chainqueen_kernels_$$t.ptx || exit 1; \
	    echo "ptx: wrote $(BUILD)/chainqueen_kernels_$$t.ptx ($$(wc -c < $(BUILD)/chainqueen_kernels_$$t.ptx) bytes)"; \
	  done; \
	else echo "ptx: SKIP (no nvcc on PATH)"; fi

# The 2D walker: optimises an MLP gait with gradients (about 1-2 minutes on one CPU core);
# writes out/walker.gif, out/walker_loss.png, out/walker_final.png.
demo: | $(BUILD)
	$(CC) -std=c99 $(CFLAGS) $(WARN) examples/03_walker.c -o $(BUILD)/walker -lm
	./$(BUILD)/walker $(OUT)

test: pydeps | $(BUILD)
	@CC="$(CC)" CXX="$(CXX)" PYTHON="$(PYTHON)" NVCC="$(NVCC)" NVCCFLAGS="$(NVCCFLAGS)" sh tests/run.sh

bench: | $(BUILD)
	$(CC) -std=c99 -O3 -march=native -fopenmp $(WARN) bench/bench.c -o $(BUILD)/bench -lm
	./$(BUILD)/bench

# The same scenes in Taichi (bench/peer_taichi.py, in a venv at build/venv-peers: pip, PyPI), side by
# side with `bench`, CPU (and CUDA where nvidia-smi works); `sh bench/peers.sh quick` is shorter.
bench-peers: | $(BUILD)
	CC="$(CC)" PYTHON="$(PYTHON)" sh bench/peers.sh

# The fluid-rigid world's dam breaks (2D and 3D, ~100k particles; see bench/fluid.c) on the CPU.
# The peer: python3 bench/peer_splishsplash.py (SPlisHSPlasH, same scene; pip install pysplishsplash).
bench-fluid: | $(BUILD)
	$(CC) -std=c99 -O3 -march=native -fopenmp $(WARN) bench/fluid.c -o $(BUILD)/bench_fluid -lm
	./$(BUILD)/bench_fluid --steps 20

clean:
	rm -rf $(BUILD) $(OUT)
