// Swagger UI on this service's own document, with nothing fetched from another origin:
// validatorUrl null stops the badge image from validator.swagger.io.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
  deepLinking: true,
  validatorUrl: null,
  persistAuthorization: false,
});
