package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/atomicfile"
)

func cmdPerplexity(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("perplexity", "-m FILE -f TEXT [-c 128] [-b 128] [--save-logits FILE | --kl-base FILE] [--json]", stderr)
	var mf modelFlags
	mf.register(fs)
	file := fs.String("f", "", "text file to score")
	c := fs.Int("c", 128, "chunk (context) length in tokens")
	b := fs.Int("b", 128, "batch size in tokens (must be at least -c, as in llama-perplexity)")
	saveLogits := fs.String("save-logits", "", "write the log-probabilities of every scored token to FILE, the base for a later --kl-base run")
	klBase := fs.String("kl-base", "", "compare with the base model whose log-probabilities --save-logits wrote to FILE (KL divergence, top-1 agreement, Δ PPL)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usagef("no text: pass -f FILE")
	}
	if *b < *c {
		return usagef("-b %d is smaller than -c %d", *b, *c)
	}
	text, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	if mf.ctx == 0 {
		mf.ctx = *c
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := interruptContext()
	defer stop()
	opts := qsf.PerplexityOptions{Context: *c}
	if *klBase != "" {
		f, err := os.Open(*klBase)
		if err != nil {
			return err
		}
		defer f.Close()
		opts.KLBase = f
	}
	var out *atomicfile.File
	if *saveLogits != "" {
		if out, err = atomicfile.Create(ctx, *saveLogits); err != nil {
			return err
		}
		defer out.Abort()
		opts.SaveLogProbs = out
	}
	res, err := m.Perplexity(ctx, string(text), opts, func(i, n int, running float64) {
		if !*asJSON {
			fmt.Fprintf(stdout, "[%d]%.4f,", i, running)
		}
	})
	if err != nil {
		return err
	}
	if out != nil {
		if err := out.Commit(); err != nil {
			return err
		}
	}
	if *asJSON {
		type kl struct {
			Mean      float64 `json:"kld_mean"`
			StdErr    float64 `json:"kld_stderr"`
			Median    float64 `json:"kld_median"`
			P99       float64 `json:"kld_p99"`
			Max       float64 `json:"kld_max"`
			Top1      float64 `json:"top1_agree"`
			Top1Err   float64 `json:"top1_agree_stderr"`
			BasePPL   float64 `json:"base_ppl"`
			DeltaPPL  float64 `json:"delta_ppl"`
			RMSDeltaP float64 `json:"rms_delta_p"`
		}
		v := struct {
			PPL     float64   `json:"ppl"`
			StdErr  float64   `json:"ppl_stderr"`
			Chunks  int       `json:"n_chunks"`
			Scored  int       `json:"n_tokens"`
			Running []float64 `json:"running_ppl"`
			*kl
		}{PPL: res.PPL, StdErr: res.StdErr, Chunks: res.Chunks, Scored: res.Scored, Running: res.Running}
		if r := res.KL; r != nil {
			v.kl = &kl{r.Mean, r.StdErr, r.Median, r.P99, r.Max, r.Top1, r.Top1Err, r.BasePPL, r.DeltaPPL, r.RMSDeltaP}
		}
		return json.NewEncoder(stdout).Encode(v)
	}
	fmt.Fprintf(stdout, "\nFinal estimate: PPL = %.4f +/- %.5f (%d chunks of %d tokens, %d scored)\n", res.PPL, res.StdErr, res.Chunks, *c, res.Scored)
	if r := res.KL; r != nil {
		fmt.Fprintf(stdout, "Base PPL: %.4f, Δ PPL: %+.4f\n", r.BasePPL, r.DeltaPPL)
		fmt.Fprintf(stdout, "Mean KLD: %.6f ± %.6f (median %.6f, 99%% %.6f, max %.6f)\n", r.Mean, r.StdErr, r.Median, r.P99, r.Max)
		fmt.Fprintf(stdout, "Same top token: %.3f ± %.3f %%, RMS Δp: %.3f %%\n", 100*r.Top1, 100*r.Top1Err, 100*r.RMSDeltaP)
	}
	return nil
}
