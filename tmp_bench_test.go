package attention
import ("testing";"fmt";"github.com/glancelab/attention/internal/testutil")
func BenchmarkTmpK(b *testing.B){
	n := 4096
	r := testutil.Rand(1)
	x := testutil.Floats(r, n, 20); y := testutil.Floats(r, n, 1); dst := make([]float32, n)
	b.Run("exp", func(b *testing.B){ for b.Loop() { expAVX2(dst, x) }; b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*n), "ns/elem") })
	b.Run("expsum", func(b *testing.B){ for b.Loop() { expSumAVX2(dst, x, 20) }; b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*n), "ns/elem") })
	b.Run("max", func(b *testing.B){ for b.Loop() { maxAVX2(x) }; b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*n), "ns/elem") })
	b.Run("scale", func(b *testing.B){ for b.Loop() { scaleAVX2(1, dst) }; b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*n), "ns/elem") })
	b.Run("softmax", func(b *testing.B){ for b.Loop() { Softmax(dst, x) }; b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*n), "ns/elem") })
	for _, n := range []int{128, 4096} {
	b.Run(fmt.Sprintf("dot/n=%d", n), func(b *testing.B){ var s float32; for b.Loop() { s += dotAVX2(x[:n], y[:n]) }; sink = s; b.ReportMetric(float64(2*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s") })
	}
	T, d := 1024, 128
	k := testutil.Floats(r, T*d, 1); q := testutil.Floats(r, d, 1); out := make([]float32, T)
	b.Run("score/T=1024/d=128", func(b *testing.B){ for b.Loop() { scoreRowsAVX2(out, k, d, q) }; b.ReportMetric(float64(2*T*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s") })
}
