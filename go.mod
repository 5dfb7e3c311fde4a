module github.com/glancelab/attention

go 1.26.0

require (
	golang.org/x/image v0.48.0
	golang.org/x/sys v0.50.0
)

require golang.org/x/text v0.44.0 // indirect
