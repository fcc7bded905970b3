//go:build !amd64

package codec

// base64SIMD is false where there is no vector loop: appendBase64 runs
// the portable word loop only.
const base64SIMD = false

// base64Vector is the amd64 loop's stand-in: it encodes nothing, and the
// word loop does all the work.
func base64Vector(out, src []byte) (i, o int) { return 0, 0 }
