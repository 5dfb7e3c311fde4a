// Package readme holds the tests that keep the repository's README.md
// honest: at most 400 lines, and every Go block in it a program that
// compiles against this module.
package readme
