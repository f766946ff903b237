#!/bin/sh
# kld-bench.sh MODEL.gguf WORKDIR: the KL-divergence comparison of QSF's
# quantizer with llama.cpp's (issue 17). It samples a calibration and a
# disjoint evaluation text from the f32 MODEL (qsf run, temperature 1,
# seeds 1.. and 10001..), saves the f32 model's logits on the evaluation
# text, quantizes MODEL with llama.cpp b4748 (every type near 2-5 bits,
# with and without an importance matrix from the calibration text;
# measured by llama-perplexity --kl-divergence, since QSF cannot load the
# IQ types) and with qsf quantize (measured by qsf perplexity --kl-base),
# and prints one line per file: name, bits per weight of the 2-D tensors,
# mean KL divergence. Run from the repository root; SEEDS (default 40)
# texts of one full context each.
set -e
m=$1; w=$2; n=${SEEDS:-40}
L=${LLAMA:-../shared/tools/llama.cpp/b4748-avx2}
mkdir -p "$w"
go build -o "$w/qsf" ./cmd/qsf
Q=$w/qsf
gen() { # first-seed > text
	i=0
	while [ $i -lt $n ]; do
		$Q run -m "$m" -p "" --temp 1 --min-p 0 --top-k 0 --top-p 1 --repeat-penalty 1 --seed $(($1 + i)) -n 0 --threads 1 2>/dev/null
		echo
		i=$((i + 1))
	done
}
[ -f "$w/cal.txt" ] || gen 1 > "$w/cal.txt"
[ -f "$w/eval.txt" ] || gen 10001 > "$w/eval.txt"
[ -f "$w/base.logits" ] || $Q perplexity -m "$m" -f "$w/eval.txt" -c 128 --save-logits "$w/base.logits" > /dev/null
# bits per weight of the 2-D tensors of a GGUF file (any ggml type)
bpw() {
	python3 - "$1" <<'PY'
import struct, sys
T = {0:(1,4),1:(1,2),2:(32,18),3:(32,20),6:(32,22),7:(32,24),8:(32,34),10:(256,84),11:(256,110),12:(256,144),13:(256,176),
     14:(256,210),16:(256,66),17:(256,74),18:(256,98),19:(256,50),20:(32,18),21:(256,110),22:(256,82),23:(256,136),29:(256,56),30:(1,2)}
f = open(sys.argv[1], 'rb'); f.read(8); nt, nkv = struct.unpack('<QQ', f.read(16))
def rd(fmt): return struct.unpack('<' + fmt, f.read(struct.calcsize('<' + fmt)))
def skip(t):
    if t in (0, 1, 7): f.read(1)
    elif t in (2, 3): f.read(2)
    elif t in (4, 5, 6): f.read(4)
    elif t in (10, 11, 12): f.read(8)
    elif t == 8: f.read(rd('Q')[0])
    elif t == 9:
        et, k = rd('IQ')
        for _ in range(k): skip(et)
for _ in range(nkv): f.read(rd('Q')[0]); skip(rd('I')[0])
b = e = 0
for _ in range(nt):
    f.read(rd('Q')[0]); nd, = rd('I'); sh = rd('Q' * nd); t, = rd('I'); rd('Q')
    if nd >= 2 and sh[1] > 1:
        k = 1
        for s in sh: k *= s
        b += k // T[t][0] * T[t][1]; e += k
print("%.4f" % (b * 8 / e))
PY
}
[ -f "$w/llama.kld" ] || $L/llama-perplexity -m "$m" -f "$w/eval.txt" -c 128 -b 128 -t 1 --kl-divergence-base "$w/llama.kld" > /dev/null 2>&1
[ -f "$w/imatrix.dat" ] || $L/llama-imatrix -m "$m" -f "$w/cal.txt" -c 128 -b 128 -t 1 -o "$w/imatrix.dat" > /dev/null 2>&1
for t in IQ2_XXS IQ2_XS IQ2_S IQ2_M Q2_K_S Q2_K IQ3_XXS IQ3_XS IQ3_S IQ3_M Q3_K_S Q3_K_M Q3_K_L IQ4_XS IQ4_NL Q4_0 Q4_1 Q4_K_S Q4_K_M Q5_0 Q5_K_S Q5_K_M Q6_K Q8_0; do
	for im in no im; do
		a=""
		[ $im = im ] && a="--imatrix $w/imatrix.dat"
		$L/llama-quantize $a "$m" "$w/l.gguf" $t 1 > /dev/null 2>&1 || continue
		k=$($L/llama-perplexity -m "$w/l.gguf" -f "$w/eval.txt" -c 128 -b 128 -t 1 --kl-divergence-base "$w/llama.kld" --kl-divergence 2>&1 | awk '/^Mean    KLD/ {print $3}')
		echo "llama.cpp $t-$im $(bpw "$w/l.gguf") $k"
	done
done
rm -f "$w/l.gguf"
kl() { $Q perplexity -m "$1" -f "$w/eval.txt" -c 128 --kl-base "$w/base.logits" --json | tail -1 | python3 -c 'import json,sys; print("%.5f" % json.load(sys.stdin)["kld_mean"])'; }
for q in "--quant ternary" "--quant 2bit" "--quant 3bit" "--quant 4bit" "--bpw 2.75" "--bpw 3.5" "--bpw 4.5"; do
	$Q quantize "$m" "$w/q.qsf" --calibration "$w/cal.txt" $q --json > "$w/q.out" 2>/dev/null
	b=$(tail -1 "$w/q.out" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["bpw"])')
	echo "qsf $q $b $(kl "$w/q.qsf")"
done
rm -f "$w/q.qsf"
