// Package faultfs injects disk write failures into Pebble's file system for
// tests: a switch that makes every write fail while reads go on working.
package faultfs

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// Writes fails every write operation of the file systems it wraps with
// errorfs.ErrInjected while it is on; reads always succeed. Off at first.
type Writes struct{ t errorfs.Toggle }

// Wrap returns fs with w's failures injected.
func (w *Writes) Wrap(fs vfs.FS) vfs.FS {
	w.t.Injector = errorfs.ErrInjected
	return errorfs.Wrap(fs, w)
}

// On makes writes fail; Off makes them work again.
func (w *Writes) On()  { w.t.On() }
func (w *Writes) Off() { w.t.Off() }

// String names the injector (errorfs.Injector).
func (w *Writes) String() string { return "writes" }

// MaybeError fails write operations while on (errorfs.Injector).
func (w *Writes) MaybeError(op errorfs.Op) error {
	if op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	return w.t.MaybeError(op)
}
