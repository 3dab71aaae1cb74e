extension DaemonConfiguration {
    /// The configuration a config file holding `bytes` gives on its own (no flags): the same parse,
    /// value checks, defaults and checks across settings as `--config path`, without the disk.
    /// Throws the error `--check-config` would report for that file.
    package init(configFile path: String, bytes: some Collection<UInt8>) throws(ConfigurationError) {
        try self.init(SettingsLayer(file: ConfigFile(path: path, bytes: bytes)), configFile: path)
    }
}
