package stream

// Checking an uncompressed QSF layer record's CRC when its matrices are
// read one piece at a time, in compute order and not in file order: the
// CRC of every matrix is taken as it is read, the bytes between the
// matrices (norms, biases, padding) are checksummed once by NewLayout, and
// when the layer's last piece is in, the segments are combined in file
// order with crc32Combine.

// crcSeg is one run of a record's bytes, in file order: a matrix (mat is
// its index in the layer's matrix CRCs) or bytes between matrices (mat is
// -1 and crc their checksum).
type crcSeg struct {
	size int64
	mat  int
	crc  uint32
}

// castagnoliReversed is the Castagnoli polynomial in the reflected bit
// order hash/crc32 computes with.
const castagnoliReversed = 0x82f63b78

// crc32Combine returns the CRC-32C of a+b given crcA = CRC(a), crcB = CRC(b)
// and lenB = len(b), without the bytes: appending lenB zero bytes to a is
// a linear map on the CRC register, applied by repeated squaring of the
// one-zero-bit operator (the method of zlib's crc32_combine).
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32 // operators for 2^k zero bits
	odd[0] = castagnoliReversed
	for n, row := 1, uint32(1); n < 32; n, row = n+1, row<<1 {
		odd[n] = row
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	for {
		gf2Square(&even, &odd) // the first time: one zero byte
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

// gf2Times multiplies the 32×32 GF(2) matrix mat (one column per bit) by
// the vector vec.
func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

// gf2Square sets square to mat·mat.
func gf2Square(square, mat *[32]uint32) {
	for n := range mat {
		square[n] = gf2Times(mat, mat[n])
	}
}

// recordCRC combines the segments of a record, given the CRCs of its
// matrices.
func recordCRC(segs []crcSeg, mats []uint32) uint32 {
	var crc uint32
	for i, sg := range segs {
		c := sg.crc
		if sg.mat >= 0 {
			c = mats[sg.mat]
		}
		if i == 0 {
			crc = c
		} else {
			crc = crc32Combine(crc, c, sg.size)
		}
	}
	return crc
}
