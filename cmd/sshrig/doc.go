// Command sshrig is an SSH interruption test rig: it proves, case by case,
// whether a tool that runs commands over SSH tells the truth when the
// connection dies at an exact moment of the exchange.
package main
