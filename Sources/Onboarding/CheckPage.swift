import ProxyWire

/// `/check`: over HTTPS, that the CA is trusted (the browser accepted a certificate atsproxy made);
/// over plain HTTP, where the HTTPS check is and what its failure means.
struct CheckPage {
    let request: LocalRequest

    var html: String {
        let url = "https://\(OnboardingHost.name)/check"
        let body: String
        switch request.arrival {
        case .proxied(secure: true), .direct(secure: true):
            var text = """
                <h1>The atsproxy CA is trusted ✓</h1>
                <section class="ok">
                <p>The atsproxy CA is trusted on this device: this page came over HTTPS with a certificate atsproxy made.</p>
                <p>Unless you tapped past a certificate warning to get here: apps cannot, so if you did, switch on full \
                trust in Settings → General → About → Certificate Trust Settings.</p>
                </section>

                """
            if case .direct = request.arrival {
                text += """
                    <p>This device reached atsproxy directly, though, not as its proxy: set the proxy as \
                    <a href="/">the onboarding page</a> says.</p>

                    """
            }
            body = text
        case .proxied(secure: false), .direct(secure: false), .web:
            body = """
                <h1>Check the CA over HTTPS</h1>
                <section class="todo">
                <p>This page came over plain HTTP, which says nothing about the CA. Open <a href="\(url)">\(url)</a>:</p>
                <ul>
                <li>It loads without a warning: the atsproxy CA is trusted on this device.</li>
                <li>A certificate warning (“This Connection Is Not Private”): the CA is not trusted. Install the profile \
                and switch on full trust in Settings → General → About → Certificate Trust Settings, as \
                <a href="http://\(OnboardingHost.name)/">the onboarding page</a> says.</li>
                <li>It does not load at all: this device is not using the proxy (step 1), or atsproxy runs without a CA.</li>
                </ul>
                </section>

                """
        }
        return HTML.document(title: "atsproxy: CA check", body: body)
    }
}
