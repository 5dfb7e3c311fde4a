module github.com/glancelab/attention/asm

go 1.26.0

require (
	github.com/glancelab/attention v0.0.0-00010101000000-000000000000
	github.com/mmcloughlin/avo v0.6.0
	golang.org/x/arch v0.33.0
)

require (
	golang.org/x/mod v0.27.0 // indirect
	golang.org/x/sync v0.16.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.36.0 // indirect
)

replace github.com/glancelab/attention => ../
