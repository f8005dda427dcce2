// Package docs holds no code: its tests keep the documentation true to
// the code (every "not built yet" claim is tied to a check that fails once
// the thing is built) and the shipped examples true to what they say.
package docs
