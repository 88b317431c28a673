//go:build !unix

package main

import "errors"

var errNoMmap = errors.New("rdmabench: the floor needs shared mappings (unix only)")

func mapShared(string, int, bool) ([]byte, error) { return nil, errNoMmap }

func unmap([]byte) error { return errNoMmap }

func unlink(string) error { return errNoMmap }
