//go:build purego || !amd64

package kernel

// WholeTileBlend reports whether the blend kernel in use fetches ahead
// within the rows of one call (see blend_run_amd64.go): none here does.
func WholeTileBlend() bool { return false }

// blend16Cols: see blend_run_amd64.go.
func blend16Cols() int { return 0 }
