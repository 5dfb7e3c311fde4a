// Package linkcost holds a test of what importing the module costs a
// program: one that calls only Dot must not link the engines' kernels.
package linkcost
