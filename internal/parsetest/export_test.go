package parsetest

var NodeVersionOK = nodeVersionOK
