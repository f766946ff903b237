package quant

import "math"

// Scale searches of ggml's K-quant reference quantizers (make_qx_quants,
// make_q3_quants, make_qkx2_quants). They are written operation for
// operation in float32 so that quantized bytes match llama-quantize; the
// explicit float32 conversions keep the compiler from fusing a multiply
// and an add into one rounding.

// groupMaxEps is ggml's GROUP_MAX_EPS.
const groupMaxEps = 1e-15

// makeQxQuants is make_qx_quants with qw == NULL: symmetric quants in
// [0, 2·nmax) stored in L (offset by nmax), returning the scale.
func makeQxQuants(n, nmax int, x []float32, L []int8, rmseType int) float32 {
	var xmax, amax float32
	for i := 0; i < n; i++ {
		ax := abs32(x[i])
		if ax > amax {
			amax = ax
			xmax = x[i]
		}
	}
	if amax < groupMaxEps {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0
	}
	iscale := float32(-nmax) / xmax
	clamp := func(l int) int { return max(-nmax, min(nmax-1, l)) }
	if rmseType == 0 {
		for i := 0; i < n; i++ {
			L[i] = int8(nmax + clamp(nearestInt(iscale*x[i])))
		}
		return 1 / iscale
	}
	returnEarly := false
	if rmseType < 0 {
		rmseType = -rmseType
		returnEarly = true
	}
	weight := func(v float32) float32 {
		switch rmseType {
		case 1:
			return v * v
		case 2:
			return 1
		case 3:
			return abs32(v)
		default:
			return sqrt32(abs32(v))
		}
	}
	var sumlx, suml2 float32
	for i := 0; i < n; i++ {
		l := clamp(nearestInt(iscale * x[i]))
		L[i] = int8(l + nmax)
		w := weight(x[i])
		fl := float32(l)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	if returnEarly {
		if suml2 > 0 {
			return 0.5 * (scale + 1/iscale)
		}
		return 1 / iscale
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / xmax
		sumlx, suml2 = 0, 0
		for i := 0; i < n; i++ {
			l := clamp(nearestInt(iscale * x[i]))
			w := weight(x[i])
			fl := float32(l)
			sumlx += float32(float32(w*x[i]) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i := 0; i < n; i++ {
				L[i] = int8(nmax + clamp(nearestInt(iscale*x[i])))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants is make_q3_quants: quants in [0, 2·nmax) in L.
func makeQ3Quants(n, nmax int, x []float32, L []int8, doRMSE bool) float32 {
	var xmax, amax float32
	for i := 0; i < n; i++ {
		ax := abs32(x[i])
		if ax > amax {
			amax = ax
			xmax = x[i]
		}
	}
	if amax < groupMaxEps {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0
	}
	iscale := float32(-nmax) / xmax
	clamp := func(l int) int { return max(-nmax, min(nmax-1, l)) }
	if doRMSE {
		var sumlx, suml2 float32
		for i := 0; i < n; i++ {
			l := clamp(nearestInt(iscale * x[i]))
			L[i] = int8(l)
			w := x[i] * x[i]
			fl := float32(l)
			sumlx += float32(float32(w*x[i]) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		for itry := 0; itry < 5; itry++ {
			nChanged := 0
			for i := 0; i < n; i++ {
				w := x[i] * x[i]
				li := float32(L[i])
				slx := sumlx - float32(float32(w*x[i])*li)
				if slx > 0 {
					sl2 := suml2 - float32(float32(w*li)*li)
					newL := clamp(nearestInt(float32(x[i]*sl2) / slx))
					if newL != int(L[i]) {
						fn := float32(newL)
						slx += float32(float32(w*x[i]) * fn)
						sl2 += float32(float32(w*fn) * fn)
						if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
							L[i] = int8(newL)
							sumlx = slx
							suml2 = sl2
							nChanged++
						}
					}
				}
			}
			if nChanged == 0 {
				break
			}
		}
		for i := 0; i < n; i++ {
			L[i] += int8(nmax)
		}
		if suml2 > 0 {
			return sumlx / suml2
		}
		return 0
	}
	for i := 0; i < n; i++ {
		L[i] = int8(clamp(nearestInt(iscale*x[i])) + nmax)
	}
	return 1 / iscale
}

// makeQkx2Quants is make_qkx2_quants: asymmetric quants in [0, nmax] with a
// non-positive minimum, searched over nstep+1 candidate scales. It returns
// the scale and stores -min in *theMin.
func makeQkx2Quants(n, nmax int, x, weights []float32, L, Laux []uint8, theMin *float32,
	rmin, rdelta float32, nstep int, useMAD bool) float32 {
	min, max := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		if x[i] < min {
			min = x[i]
		}
		if x[i] > max {
			max = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if min > 0 {
		min = 0
	}
	if max == min {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		*theMin = -min
		return 0
	}
	errOf := func(diff float32) float32 {
		if useMAD {
			return abs32(diff)
		}
		return diff * diff
	}
	clamp := func(l int) int { return maxInt(0, minInt(nmax, l)) }
	iscale := float32(nmax) / (max - min)
	scale := 1 / iscale
	var bestError float32
	for i := 0; i < n; i++ {
		l := clamp(nearestInt(iscale * (x[i] - min)))
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+min) - x[i]
		bestError += float32(weights[i] * errOf(diff))
	}
	if nstep < 1 {
		*theMin = -min
		return scale
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (max - min)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := clamp(nearestInt(iscale * (x[i] - min)))
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i := 0; i < n; i++ {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				curError += float32(weights[i] * errOf(diff))
			}
			if curError < bestError {
				copy(L[:n], Laux[:n])
				bestError = curError
				scale = thisScale
				min = thisMin
			}
		}
	}
	*theMin = -min
	return scale
}

func maxInt(a, b int) int { return max(a, b) }
func minInt(a, b int) int { return min(a, b) }

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
