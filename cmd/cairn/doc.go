// Command cairn turns cluster specs kept in Git into ordered plans of
// small, safe steps, each reviewed as a pull request.
//
//	cairn validate PATH...                 check spec files
//	cairn plan --repo DIR [--live FILE]    plan every cluster of a repo
//	cairn schema [--out DIR]               write the spec JSON Schemas
//
// This is the only package that wires the others together.
package main
