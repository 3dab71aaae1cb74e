import ATSProxyDaemon

// The daemon's command lives in ATSProxyDaemon so tests can parse its flags without a process.
DaemonMain.main()
