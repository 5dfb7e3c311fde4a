module github.com/glancelab/attention/bench/peers

go 1.26.0

require (
	github.com/glancelab/attention v0.0.0-00010101000000-000000000000
	github.com/viterin/vek v0.4.3
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	golang.org/x/exp v0.0.0-20260824195058-e88cd73687aa // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/glancelab/attention => ../..

tool golang.org/x/perf/cmd/benchstat
