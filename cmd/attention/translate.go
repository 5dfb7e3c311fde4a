package main

import (
	"strings"

	"github.com/glancelab/attention"
)

// The toy translation's encoder states are made up by hand: each source word
// owns one axis, with a little overlap between neighbours so the weights are
// soft rather than one-hot, as in a trained model.
var (
	sourceWords = []string{"the", "black", "cat", "sat"}
	sourceState = [][]float32{
		{1.0, 0.2, 0.0, 0.1}, // the
		{0.1, 1.0, 0.3, 0.0}, // black
		{0.2, 0.3, 1.0, 0.2}, // cat
		{0.0, 0.1, 0.3, 1.0}, // sat
	}
	// Each decoder state points at the source word being translated. French
	// puts the adjective after the noun, so "chat noir" looks at "cat" then
	// "black"; "était" also glances at "cat", its subject. Every printed
	// weight stays well clear of rounding and shade boundaries, so all
	// kernel implementations draw the same grid.
	targetWords = []string{"le", "chat", "noir", "était", "assis"}
	targetState = [][]float32{
		{6.0, 0.5, 1.0, 0.0}, // le     → the
		{0.0, 1.0, 6.0, 0.0}, // chat   → cat
		{0.0, 6.0, 1.0, 0.0}, // noir   → black
		{0.0, 0.0, 3.0, 5.0}, // était  → sat, with cat as its subject
		{0.0, 0.0, 0.0, 6.0}, // assis  → sat
	}
)

// translate attends over the source once per target word: one Memory holds
// the encoder states, and every step computes fresh weights from its own
// decoder state, never reusing the previous step's. It returns the weights
// and the name of the score function.
func translate() (weightGrid, string, error) {
	d := len(sourceState[0])
	flat := make([]float32, 0, len(sourceState)*d)
	for _, h := range sourceState {
		flat = append(flat, h...)
	}
	states, err := attention.NewMatrix(len(sourceState), d, flat)
	if err != nil {
		return weightGrid{}, "", err
	}
	// The encoder states serve as both keys and values, as in Bahdanau's
	// model; scaling by 1/√d keeps the weights soft.
	mem, err := attention.NewMemory(attention.ScoreScaledDot(), states, states)
	if err != nil {
		return weightGrid{}, "", err
	}

	grid := weightGrid{rows: targetWords, cols: sourceWords}
	grid.weights = make([]float32, len(targetWords)*len(sourceWords))
	ctx := make([]float32, mem.ValueDim())
	var ws attention.Workspace
	for t, query := range targetState {
		row := grid.weights[t*mem.Len() : (t+1)*mem.Len()]
		if err := mem.Attend(ctx, row, query, &ws); err != nil {
			return weightGrid{}, "", err
		}
	}
	return grid, mem.Scorer().String(), nil
}

func writeTranslation(p *printer) error {
	grid, scorer, err := translate()
	if err != nil {
		return err
	}
	p.printf("Toy translation: %q → %q\n", strings.Join(sourceWords, " "), strings.Join(targetWords, " "))
	p.printf("  one Memory over the %d source states (score %s), a fresh Attend per target word\n\n",
		len(sourceWords), scorer)
	drawGrid(p, grid)
	p.printf("\n")
	return nil
}
